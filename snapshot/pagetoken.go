package snapshot

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
)

// Page tokens: base64url (no padding) of uvarint(version) followed by the
// last row key returned; the scan resumes at the first key after it.
func encodePageToken(version int64, lastKey []byte) string {
	b := binary.AppendUvarint(nil, uint64(version))
	return base64.RawURLEncoding.EncodeToString(append(b, lastKey...))
}

func decodePageToken(tok string) (int64, []byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: not base64url", ErrBadPageToken)
	}
	v, n := binary.Uvarint(b)
	if n <= 0 || v == 0 || len(b) == n {
		return 0, nil, fmt.Errorf("%w: malformed", ErrBadPageToken)
	}
	return int64(v), b[n:], nil
}
