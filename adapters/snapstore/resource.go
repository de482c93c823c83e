package snapstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/snapshot"
)

// A resource of a snapstore connection names a dataset of one table
// ("readings"), or one table of a dataset of several tables as resources
// lists it, the dataset in the place of a schema ("shop.public.orders",
// or quoted, "\"shop\".\"public.orders\""); either may end in "@tag" or
// "@N" (a version number) to read that version rather than the current
// one. A dataset's name holds letters, digits and "_.:@-", a table's
// anything: the text is tried in the order targets gives, against what
// the server holds (resolve).

// target is one meaning of a resource: a dataset, a table of it (""
// for a dataset of one table), and a tag or version number ("" for the
// current version).
type target struct {
	dataset, table, at string
}

// label is the target's name without its version: "dataset", or
// "dataset.table".
func (t target) label() string {
	if t.table == "" {
		return t.dataset
	}
	return t.dataset + "." + t.table
}

// what names the target in errors.
func (t target) what() string {
	if t.table == "" {
		return fmt.Sprintf("dataset %q", t.dataset)
	}
	return fmt.Sprintf("table %q of dataset %q", t.table, t.dataset)
}

// targets returns the meanings a resource may have, in the order they
// are tried: quoted parts exactly, when the text parses so (a dataset's
// name holds no quote); then the whole text as a dataset, then each split
// at an "@" as dataset@tag; then each split at a "." as dataset.table,
// the table part whole, then split at each "@" as table@tag. Candidates
// whose dataset is not a valid dataset name are left out.
func targets(r string) []target {
	var out []target
	add := func(t target) {
		if validDataset(t.dataset) {
			out = append(out, t)
		}
	}
	if strings.IndexByte(r, '"') >= 0 {
		q, at := r, ""
		if i := strings.LastIndexByte(r, '"'); i+2 < len(r) && r[i+1] == '@' {
			q, at = r[:i+1], r[i+2:]
		}
		if parts, ok := source.SplitQuotedName(q, '"'); ok {
			t := target{dataset: parts[0], at: at}
			if len(parts) == 2 {
				t.table = parts[1]
			}
			add(t)
		}
	}
	add(target{dataset: r})
	for i := 1; i < len(r)-1; i++ {
		if r[i] == '@' {
			add(target{dataset: r[:i], at: r[i+1:]})
		}
	}
	for i := 1; i < len(r)-1; i++ {
		if r[i] != '.' {
			continue
		}
		d, rest := r[:i], r[i+1:]
		add(target{dataset: d, table: rest})
		for j := 1; j < len(rest)-1; j++ {
			if rest[j] == '@' {
				add(target{dataset: d, table: rest[:j], at: rest[j+1:]})
			}
		}
	}
	return out
}

// validDataset reports whether s may be a dataset's name: 1 to 200 bytes
// of ASCII letters, digits and "_.:@-", as the server's names are.
func validDataset(s string) bool {
	if len(s) == 0 || len(s) > 200 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == ':' || c == '@' || c == '-') {
			return false
		}
	}
	return true
}

// readable returns the targets whose dataset the server lists to the
// connection's token, when they name more than one dataset
// ("shop.public.orders" may be a dataset of that name or a table of
// "shop"): asking for each with GET /v1/datasets/{dataset} would ask a
// token limited to "shop" for datasets outside its grant, and the server
// records each such 404 in its audit trail as a refusal (grant outside,
// docs/security.md), a probe for names at every run. GET /v1/datasets
// lists only what the token may read. Targets of one dataset, or a list
// that fails (the GETs that follow meet the same failure and say it),
// are returned as they are.
func (s *snapSource) readable(ctx context.Context, ts []target) []target {
	distinct := map[string]bool{}
	for _, t := range ts {
		distinct[t.dataset] = true
	}
	if len(distinct) < 2 {
		return ts
	}
	var list datasetList
	if _, err := s.getJSON(ctx, "/v1/datasets", nil, &list); err != nil {
		return ts
	}
	listed := make(map[string]bool, len(list.Datasets))
	for _, d := range list.Datasets {
		listed[d.Name] = true
	}
	out := ts[:0:0]
	for _, t := range ts {
		if listed[t.dataset] {
			out = append(out, t)
		}
	}
	return out
}

// resolved is a target found on the server: the dataset's identity, the
// version read and, for a table, the table at that version.
type resolved struct {
	target
	created time.Time
	vi      *snapshot.VersionInfo
	info    *snapshot.TableInfo // the table at vi; nil for a dataset of one table
}

// schema is the schema of what the target reads.
func (r resolved) schema() snapshot.Schema {
	if r.info != nil {
		return r.info.Schema
	}
	return r.vi.Schema
}

// stats are the stats of what the target reads.
func (r resolved) stats() snapshot.RunStats {
	if r.info != nil {
		return r.info.Stats
	}
	return r.vi.Stats
}

// resolve finds what resource names on the server, trying targets in
// order, those of datasets the token may read (readable): GET
// /v1/datasets/{dataset}, with ?tag= or ?version= for a target with one.
// pin, when not zero, is the version to read of the dataset pin.dataset
// when the target names none (a point's version). A text that
// names nothing is source.ErrResourceNotFound: the most precise one met
// (a tag or version the dataset does not have before a table a version
// lacks), else a bare one the caller names. A dataset of several tables
// named without a table is an *OptionError. The server down or refusing
// the token ends the search.
func (s *snapSource) resolve(ctx context.Context, resource string, pin target) (resolved, error) {
	type answer struct {
		ans datasetAnswer
		err error
	}
	seen := map[[2]string]answer{}
	// miss is the first miss but a table a version lacks; tableMiss the
	// first of those, or the first of a target with a version, which is
	// more precise ("shop.orders@first": no tag first, rather than no
	// table "orders@first" in the current version).
	var miss, tableMiss error
	tableMissAt := false
	for _, t := range s.readable(ctx, targets(resource)) {
		at := t.at
		if at == "" && pin.dataset == t.dataset {
			at = pin.at
		}
		a, ok := seen[[2]string{t.dataset, at}]
		if !ok {
			q := url.Values{}
			if at != "" {
				if _, err := strconv.ParseInt(at, 10, 64); err == nil {
					q.Set("version", at)
				} else {
					q.Set("tag", at)
				}
			}
			_, a.err = s.getJSON(ctx, "/v1/datasets/"+url.PathEscape(t.dataset), q, &a.ans)
			a.err = s.versionErr(a.err, t.dataset, 0)
			seen[[2]string{t.dataset, at}] = a
		}
		if a.err != nil {
			var se *statusError
			if !errors.Is(a.err, source.ErrResourceNotFound) {
				return resolved{}, a.err
			}
			if errors.As(a.err, &se) && se.Code != "dataset_not_found" && miss == nil {
				miss = a.err // the dataset exists: no such tag or version, or nothing committed yet
			}
			continue
		}
		vi := a.ans.VersionRead
		if vi == nil {
			vi = a.ans.CurrentInfo
		}
		if vi == nil || vi.Version == 0 {
			if miss == nil {
				miss = fmt.Errorf("%w: dataset %q has no committed version yet", source.ErrResourceNotFound, t.dataset)
			}
			continue
		}
		r := resolved{target: t, created: a.ans.CreatedAt, vi: vi}
		switch {
		case t.table == "" && len(vi.Tables) > 0:
			if miss == nil {
				miss = &source.OptionError{Key: "resource", Msg: fmt.Sprintf(
					"dataset %q holds several tables (%s): name one as %s.TABLE, or copy them all with resources or include",
					t.dataset, strings.Join(vi.TableNames(), ", "), t.dataset)}
			}
			continue
		case t.table != "":
			for i := range vi.Tables {
				if vi.Tables[i].Name == t.table {
					r.info = &vi.Tables[i]
				}
			}
			if r.info == nil {
				if tableMiss == nil || t.at != "" && !tableMissAt {
					held := "one table, named by the dataset alone"
					if len(vi.Tables) > 0 {
						held = "the tables " + strings.Join(vi.TableNames(), ", ")
					}
					tableMiss = fmt.Errorf("%w: dataset %q has no table %q: version %d holds %s",
						source.ErrResourceNotFound, t.dataset, t.table, vi.Version, held)
					tableMissAt = t.at != ""
				}
				continue
			}
		}
		return r, nil
	}
	if miss != nil {
		return resolved{}, miss
	}
	if tableMiss != nil {
		return resolved{}, tableMiss
	}
	// The caller names the resource and the connection. A token limited
	// to some datasets reads every other as absent (docs/security.md,
	// grants), so a miss with a token may be the grant's.
	if s.token.Reveal() != "" {
		return resolved{}, fmt.Errorf("%w: the server has no dataset of that name that the connection's token may read (a token limited to some datasets reads no other)", source.ErrResourceNotFound)
	}
	return resolved{}, source.ErrResourceNotFound
}
