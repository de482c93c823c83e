package snapshot

import "context"

// VersionAt describes the version at selects, resolved as Reader
// resolves it, without pinning it: for a dataset of named tables too,
// whose Tables list what a TableReader of the same At reads. Errors as
// Reader's, ErrTableRequired aside.
func (db *DB) VersionAt(ctx context.Context, dataset string, at At) (VersionInfo, error) {
	if err := checkAt(at); err != nil {
		return VersionInfo{}, err
	}
	ds, err := db.lookup(ctx, dataset)
	if err != nil {
		return VersionInfo{}, err
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	vi, err := ds.resolveLocked(at)
	if err != nil {
		return VersionInfo{}, err
	}
	return ds.infoLocked(vi), nil
}
