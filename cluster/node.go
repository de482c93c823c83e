package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// NodeIDFile is the file of the data directory that holds the node id (K1).
const NodeIDFile = "node-id"

// validID is the form of a node id: what newNodeID makes (26 characters of
// lower-case base32), or a name an operator wrote into the file before the
// first start, in lower case letters, digits and dashes.
var validID = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// newNodeID returns a random node id: 128 bits as 26 characters of
// lower-case base32.
func newNodeID() string {
	return strings.ToLower(rand.Text())
}

// LoadNodeID returns the node id kept in dir (K1), creating it when dir has
// none: created reports that. The file is written to a temporary name,
// synced and renamed, so a crash leaves either no id or a whole one. A file
// that holds no valid id is an error, never replaced: a new id would make
// the node a stranger to the cluster that knows it.
func LoadNodeID(dir string) (id string, created bool, err error) {
	path := filepath.Join(dir, NodeIDFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		id = strings.TrimSpace(string(b))
		if !validID.MatchString(id) {
			return "", false, fmt.Errorf("cluster: %s holds no node id (want lower-case letters, digits and dashes, at most 63); fix or remove it", path)
		}
		return id, false, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", false, fmt.Errorf("cluster: reading the node id: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false, fmt.Errorf("cluster: creating the data dir: %w", err)
	}
	id = newNodeID()
	if err := writeFileAtomic(path, []byte(id+"\n"), 0o600); err != nil {
		return "", false, fmt.Errorf("cluster: writing the node id: %w", err)
	}
	return id, true, nil
}

// writeFileAtomic writes data to path through a synced temporary file and
// a rename, then syncs the directory.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// newIncarnation returns a random incarnation for this process (K1): 64
// bits as 16 hex digits.
func newIncarnation() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
