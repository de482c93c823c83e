package server

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/snapstore/snapstore/snapshot"
)

// pageToken is the server's scan continuation: the pinned version, a dot,
// a hash of the dataset name (8 hex digits), a dot, and snapshot's own
// token. Carrying the version lets the next page pin the same version
// without the client repeating it; the hash makes a token of another
// dataset a bad_page_token rather than a read of this dataset at that
// version.
func encodePageToken(dataset string, version int64, inner string) string {
	if inner == "" {
		return ""
	}
	return strconv.FormatInt(version, 10) + "." + datasetHash(dataset) + "." + inner
}

// decodePageToken splits a token of encodePageToken. Every malformed token
// and every token of another dataset is snapshot.ErrBadPageToken (400
// bad_page_token, field page_token), as snapshot's own malformed tokens are.
func decodePageToken(dataset, tok string) (int64, string, error) {
	bad := func(why string) error {
		return withField(fmt.Errorf("%w: %s", snapshot.ErrBadPageToken, why), "page_token")
	}
	v, rest, ok1 := strings.Cut(tok, ".")
	h, inner, ok2 := strings.Cut(rest, ".")
	id, err := strconv.ParseInt(v, 10, 64)
	if !ok1 || !ok2 || err != nil || id < 1 || inner == "" || len(h) != 8 {
		return 0, "", bad("not a page token of this server")
	}
	if h != datasetHash(dataset) {
		return 0, "", bad(fmt.Sprintf("not a page token of dataset %q", dataset))
	}
	return id, inner, nil
}

// datasetHash is the FNV-1a hash of a dataset name, 8 hex digits.
func datasetHash(dataset string) string {
	h := fnv.New32a()
	h.Write([]byte(dataset))
	return fmt.Sprintf("%08x", h.Sum32())
}
