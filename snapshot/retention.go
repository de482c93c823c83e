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

// expired applies the retention policy (G1) to the row's kept versions
// at now and returns the versions to expire, ascending.
func (st *rowState) expired(now time.Time) []int64 {
	ret := st.Config.Retention
	minV := max(ret.MinVersions, 1)
	tagged := map[int64]bool{}
	for _, v := range st.Tags {
		tagged[v] = true
	}
	var out []int64
	n := len(st.Versions)
	for i, ref := range st.Versions {
		switch {
		case ref.Version == st.Current, tagged[ref.Version]:
		case n-i <= minV: // among the newest MinVersions
		case ret.TTL == 0 || now.Sub(ref.CommittedAt) < ret.TTL:
		default:
			out = append(out, ref.Version)
		}
	}
	return out
}
