package snapshot

// Page tokens. A scan that stops at its limit with rows left returns a
// token from which the next page continues (RowIterator.NextPageToken,
// ScanOptions.PageToken). It is the only continuation a caller needs: it
// names the dataset and table, so that a token of another dataset or of
// another table of the dataset is refused rather than read there (its
// last key would skip or repeat rows of the other), and the version the
// scan pinned,
// so that every page reads that one version (D2); the next page starts at
// the first key after the last row returned. The token is base64url
// without padding of
//
//	uvarint(len(name)) name uvarint(version) last-row-key
//
// where name is the dataset's name, followed for a table of a dataset of
// several tables by a NUL byte and the table's name (neither name holds a
// control character, so the split is unambiguous and a dataset of one
// table keeps the token it always had).
// and is opaque to callers: DecodePageToken gives them the version to pin.

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
)

// pageToken is a decoded page token.
type pageToken struct {
	dataset string
	table   string // "" for a dataset of one table
	version int64
	lastKey []byte // the row key of the last row returned, never empty
}

func (t pageToken) encode() string {
	name := t.dataset
	if t.table != "" {
		name += "\x00" + t.table
	}
	b := binary.AppendUvarint(nil, uint64(len(name)))
	b = append(b, name...)
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
	name := string(b[k : k+int(n)])
	t := pageToken{dataset: name}
	if i := strings.IndexByte(name, 0); i >= 0 {
		t.dataset, t.table = name[:i], name[i+1:]
	}
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
