package snapshot

import "time"

// Retention says which committed versions a dataset keeps (G1): every
// version younger than TTL and at least the newest MinVersions; the current
// and tagged versions always.
type Retention struct {
	// TTL is the age, from commit time, up to which versions are kept; 0
	// means forever.
	TTL time.Duration `json:"ttl"`
	// MinVersions is the number of newest versions always kept; default 1
	// (the current version), values < 1 mean 1.
	MinVersions int `json:"min_versions"`
}

// expiredLocked applies the retention policy (G1) and returns the versions
// to expire, ascending.
func (ds *dataset) expiredLocked(now time.Time) []int64 {
	ret := ds.cfg.Retention
	minV := max(ret.MinVersions, 1)
	tagged := map[int64]bool{}
	for _, v := range ds.tags {
		tagged[v] = true
	}
	var out []int64
	n := len(ds.versions)
	for i, vi := range ds.versions {
		switch {
		case vi.Version == ds.current, tagged[vi.Version]:
		case n-i <= minV: // among the newest MinVersions
		case ret.TTL == 0 || now.Sub(vi.CommittedAt) < ret.TTL:
		default:
			out = append(out, vi.Version)
		}
	}
	return out
}
