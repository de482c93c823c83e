package placement

import (
	"math"

	"github.com/cespare/xxhash/v2"
)

// Placement: weighted rendezvous (highest random weight) hashing, after
// Thaler and Ravishankar, with the weighting of Schindelhauer and Schomaker
// ("weighted distributed hash tables"): node i scores a name
//
//	score_i = -w_i / ln(h_i),  h_i = hash(id_i, name) mapped into (0, 1)
//
// and the highest score owns the name. -1/ln(h) of a uniform h is an
// exponential variate's inverse, so node i wins with probability
// w_i / sum(w): weights are honoured exactly in expectation. A join or leave
// changes only the names the joining or leaving node wins or held, about
// 1/N of them (cluster.K6), where a jump over a sorted address list
// (NiFi's scheme) moves about half when a node joins in the middle.

// Candidate is a node placement may choose: its stable id (cluster.K1) and its
// weight (Tags.Weight).
type Candidate struct {
	ID     string
	Weight int
}

// score is node c's score for name.
func score(c Candidate, name string) float64 {
	var d xxhash.Digest
	d.Reset()
	d.WriteString(c.ID)
	d.Write([]byte{0})
	d.WriteString(name)
	// 53 bits into (0, 1): never 0 (ln 0) and never 1 (ln 1 = 0).
	h := (float64(d.Sum64()>>11) + 0.5) / (1 << 53)
	w := float64(max(c.Weight, 1))
	return -w / math.Log(h)
}

// Owner returns the id of the candidate that owns name, or false when there
// is none. Equal scores (never seen with 53-bit hashes, but defined) go to
// the smaller id.
func Owner(name string, nodes []Candidate) (string, bool) {
	best, bestScore := "", math.Inf(-1)
	for _, c := range nodes {
		s := score(c, name)
		if s > bestScore || (s == bestScore && c.ID < best) {
			best, bestScore = c.ID, s
		}
	}
	return best, best != ""
}
