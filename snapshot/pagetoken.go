package snapshot

// Page tokens. A scan that stops at its limit with rows left returns a
// token from which the next page continues (RowIterator.NextPageToken,
// ScanOptions.PageToken). It is the only continuation a caller needs: it
// names the dataset, so that a token of another dataset is refused rather
// than read at that dataset's version, and the version the scan pinned,
// so that every page reads that one version (D2); the next page starts at
// the first key after the last row returned. The token is base64url
// without padding of
//
//	uvarint(len(dataset)) dataset uvarint(version) last-row-key
//
// and is opaque to callers: DecodePageToken gives them the version to pin.

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
)

// pageToken is a decoded page token.
type pageToken struct {
	dataset string
	version int64
	lastKey []byte // the row key of the last row returned, never empty
}

func (t pageToken) encode() string {
	b := binary.AppendUvarint(nil, uint64(len(t.dataset)))
	b = append(b, t.dataset...)
	b = binary.AppendUvarint(b, uint64(t.version))
	return base64.RawURLEncoding.EncodeToString(append(b, t.lastKey...))
}

// decodePageToken decodes tok; ErrBadPageToken when it is not a token.
func decodePageToken(tok string) (pageToken, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return pageToken{}, fmt.Errorf("%w: not base64url", ErrBadPageToken)
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n == 0 || n > uint64(len(b)-k) {
		return pageToken{}, fmt.Errorf("%w: malformed", ErrBadPageToken)
	}
	t := pageToken{dataset: string(b[k : k+int(n)])}
	b = b[k+int(n):]
	v, k := binary.Uvarint(b)
	if k <= 0 || v == 0 || v > math.MaxInt64 || len(b) == k {
		return pageToken{}, fmt.Errorf("%w: malformed", ErrBadPageToken)
	}
	t.version, t.lastKey = int64(v), b[k:]
	return t, nil
}

// isRowKey reports whether key is exactly n encoded key values (a row key
// of a dataset with n key columns), so that a token with bytes appended to
// its last key is refused rather than read as a key that was never
// returned.
func isRowKey(key []byte, n int) bool {
	for range n {
		_, l, ok := decodeKeyValue(key)
		if !ok {
			return false
		}
		key = key[l:]
	}
	return len(key) == 0
}

// DecodePageToken returns the version that a page token of a scan of
// dataset pins, so that the caller can open the Reader the next page
// needs (DB.Reader with At{Version: version}) and pass the token on in
// ScanOptions.PageToken. ErrBadPageToken when tok does not decode or was
// made by a scan of another dataset.
func DecodePageToken(dataset, tok string) (version int64, err error) {
	t, err := decodePageToken(tok)
	if err != nil {
		return 0, err
	}
	if t.dataset != dataset {
		return 0, fmt.Errorf("%w: not a page token of dataset %q", ErrBadPageToken, dataset)
	}
	return t.version, nil
}
