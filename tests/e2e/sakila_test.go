package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// sakilaChanges change the cloned Sakila database between the two runs of
// TestSakila: inserts, updates of plain and key columns (one cascading into
// a composite key), deletes (one setting a foreign key to NULL), NULLs set
// and unset, bytes that are not UTF-8, and a column added to one table.
var sakilaChanges = []stmt{
	{"INSERT INTO actor (actor_id, first_name, last_name) VALUES (201, 'ADA', 'LOVELACE'), (202, 'ÉMILE', 'ZOLA ☃')", 2},
	{"INSERT INTO film_actor (actor_id, film_id) VALUES (201, 1), (202, 1)", 2},
	{"UPDATE actor SET last_name = 'GUINESS-PATTERSON' WHERE actor_id = 1", 1},
	// A key column: actor 3 becomes 500, and ON UPDATE CASCADE moves the
	// composite keys (3, film) of film_actor to (500, film).
	{"UPDATE actor SET actor_id = 500 WHERE actor_id = 3", 1},
	// A composite key column directly.
	{"UPDATE film_actor SET film_id = 2 WHERE actor_id = 4 AND film_id = 23", 1},
	{"DELETE FROM film_actor WHERE actor_id = 10 AND film_id = 1", 1},
	{"DELETE FROM payment WHERE payment_id IN (1, 2, 3)", 3},
	// ON DELETE SET NULL sets payment.rental_id of rental 4's payment to NULL.
	{"DELETE FROM rental WHERE rental_id = 4", 1},
	{"UPDATE customer SET email = NULL WHERE customer_id = 7", 1},
	{"UPDATE rental SET return_date = '2006-03-01 12:00:00' WHERE rental_id = 11496", 1},
	{"UPDATE address SET address2 = 'Suite 9' WHERE address_id = 1", 1},
	{"UPDATE staff SET picture = UNHEX('00FF10FE80') WHERE staff_id = 2", 1},
	{"UPDATE staff SET picture = CONCAT(LEFT(picture, 100), UNHEX('FF'), SUBSTRING(picture, 102)) WHERE staff_id = 1", 1},
	// The film triggers keep film_text in step.
	{"UPDATE film SET title = 'ACADEMY DINOSAUR II', special_features = 'Trailers,Behind the Scenes', rating = 'NC-17', rental_rate = 0.49 WHERE film_id = 1", 1},
	{"INSERT INTO film (film_id, title, description, release_year, language_id, rental_duration, rental_rate, length, replacement_cost, rating, special_features) " +
		"VALUES (1001, 'E2E FILM', 'ünïcödé — ☃', 2026, 1, 3, 1.99, 95, 12.99, 'PG', 'Commentaries')", 1},
	{"DELETE FROM film_category WHERE film_id = 1000", 1},
	{"ALTER TABLE category ADD COLUMN slug VARCHAR(40) NOT NULL DEFAULT ''", 0},
	{"UPDATE category SET slug = LOWER(REPLACE(name, ' ', '-'))", 16},
}

// TestSakila runs one adapter per Sakila table through the HTTP API,
// checks every dataset against its source table (JSON pages, NDJSON, point
// reads, checksums), changes the source, runs again, and checks the new
// versions, the diffs, and reads of the first versions by version, tag and
// as_of.
func TestSakila(t *testing.T) {
	t.Parallel() // mostly waiting (MariaDB, HTTP); runs beside the other long test
	e := getMySQLEnv(t)
	start := time.Now()
	dbName := fmt.Sprintf("e2e_sakila_%d", os.Getpid())
	e.cloneSakila(t, dbName)
	src := e.open(t, dbName)
	tables := baseTables(t, src, dbName)
	if len(tables) != 16 {
		t.Fatalf("sakila has %d base tables, want 16: %v", len(tables), tables)
	}
	specs := map[string]tableSpec{}
	before := map[string]map[string]canonRow{}
	total := 0
	for _, tb := range tables {
		specs[tb] = loadSpec(t, src, dbName, tb)
		before[tb] = specs[tb].read(t, src)
		total += len(before[tb])
	}
	t.Logf("source: %d tables, %d rows (clone took %s)", len(tables), total, time.Since(start).Round(time.Millisecond))

	p := startServer(t, e.Password)
	p.createMySQLConnection(t, "sakila", e.Host, e.Port, e.User, dbName)
	for _, tb := range tables {
		p.createAdapter(t, map[string]any{"name": tb, "connection": "sakila", "resource": tb, "dataset": tb})
	}

	checkSecrets(t, p, e, dbName)

	v1 := checkRun1(t, p, tables, specs, before)

	// Change the source, run 2.
	execAll(t, src, sakilaChanges)
	after := map[string]map[string]canonRow{}
	specs2 := map[string]tableSpec{}
	for _, tb := range tables {
		specs2[tb] = loadSpec(t, src, dbName, tb)
		after[tb] = specs2[tb].read(t, src)
	}
	if _, ok := specs2["category"].Cols["slug"]; !ok {
		t.Fatal("fixture: category.slug was not added")
	}
	runs2, changed := checkRun2(t, p, tables, specs2, before, after, v1)
	// The fixture's changes reach these tables, and only these.
	if got, want := strings.Join(changed, " "), "actor address category customer film film_actor film_category film_text payment rental staff"; got != want {
		t.Errorf("fixture: the source changed tables %s, want %s", got, want)
	}

	// Spot checks of the fixture's intent, read through point reads.
	actor, filmActor, payment := specs2["actor"], specs2["film_actor"], specs2["payment"]
	if _, _, r := p.getRow(t, actor, "actor", canonRow{"actor_id": "num:3"}, ""); r.status != http.StatusNotFound {
		t.Errorf("actor 3 after its key changed: status %d, want 404", r.status)
	} else {
		wantProblem(t, "actor 3 after its key changed", r, http.StatusNotFound, "row_not_found")
	}
	if row, _, _ := p.getRow(t, actor, "actor", canonRow{"actor_id": "num:3"}, "tag=original"); row == nil || row["first_name"] != before["actor"]["num:3"]["first_name"] {
		t.Errorf("actor 3 at tag original: %v, want %v", row, before["actor"]["num:3"])
	}
	if row, _, _ := p.getRow(t, filmActor, "film_actor", canonRow{"actor_id": "num:500", "film_id": "num:17"}, ""); row == nil {
		t.Errorf("film_actor (500, 17): not found after the cascaded key change")
	}
	row, _, _ := p.getRow(t, payment, "payment", canonRow{"payment_id": paymentOfRental4(t, before["payment"])}, "")
	if row == nil || row["rental_id"] != nullMark {
		t.Errorf("payment of rental 4 after the rental was deleted: %v, want rental_id NULL", row)
	}
	cat := p.dataset(t, "category")
	if !hasColumn(cat.Current, "slug") {
		t.Errorf("category's current schema lacks the added column slug: %+v", cat.Current.Schema)
	}
	var v1cat versionInfo
	p.jsonCall(t, http.StatusOK, "GET", fmt.Sprintf("/v1/datasets/category/versions/%d", v1["category"]), nil, &v1cat)
	if hasColumn(v1cat, "slug") {
		t.Errorf("category's first version's schema has the column slug added later")
	}

	// Rollback to the first version commits a version with its content;
	// the second stays readable; then a run brings the changes back.
	for _, tb := range []string{"actor", "film_actor"} {
		v2 := runs2[tb].Version
		var vi versionInfo
		p.jsonCall(t, http.StatusOK, "POST", "/v1/datasets/"+tb+"/rollback", map[string]any{"version": v1[tb]}, &vi)
		if d := p.dataset(t, tb); vi.Version <= v2 || vi.RestoredFrom != v1[tb] || d.CurrentVersion != vi.Version {
			t.Errorf("%s: rollback to %d answered version %d restored from %d, current %d", tb, v1[tb], vi.Version, vi.RestoredFrom, d.CurrentVersion)
		}
		got, ver := p.scanNDJSON(t, specs2[tb], tb, "")
		if ver != vi.Version {
			t.Errorf("%s after rollback: read at version %d, want %d", tb, ver, vi.Version)
		}
		sameRows(t, tb+" after rollback", before[tb], got)
		got, ver = p.scanNDJSON(t, specs2[tb], tb, fmt.Sprintf("version=%d", v2))
		if ver != v2 {
			t.Errorf("%s at the version after the one restored: read at %d, want %d", tb, ver, v2)
		}
		sameRows(t, fmt.Sprintf("%s at version %d after the rollback", tb, v2), after[tb], got)

		r3 := p.mustRun(t, tb)
		ins, upd, del := countOps(expectedChanges(before[tb], after[tb]))
		if r3.Stats.Inserted != int64(ins) || r3.Stats.Updated != int64(upd) || r3.Stats.Deleted != int64(del) {
			t.Errorf("%s: run after rollback: stats %+v, want %d inserted, %d updated, %d deleted", tb, r3.Stats, ins, upd, del)
		}
		got, ver, _ = p.scanPages(t, specs2[tb], tb, "", 1000)
		if ver != r3.Version {
			t.Errorf("%s after rollback and run: read at version %d, want %d", tb, ver, r3.Version)
		}
		sameRows(t, tb+" after rollback and run", after[tb], got)
		p.checkDiff(t, specs2[tb], tb, v1[tb], r3.Version, before[tb], after[tb])
		if got, want := versionIDs(p.versions(t, tb)), []int64{r3.Version, vi.Version, v2, v1[tb]}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: versions after rollback and run %v, want %v", tb, got, want)
		}
	}
	t.Logf("whole test: %s", time.Since(start).Round(time.Millisecond))
}

// checkRun1 runs every adapter once (one per table) and checks each dataset
// against its source table: run stats, current version, key, and every row
// through JSON pages, NDJSON and point reads; it tags each version
// "original" and returns the versions.
func checkRun1(t *testing.T, p *proc, tables []string, specs map[string]tableSpec, before map[string]map[string]canonRow) map[string]int64 {
	t.Helper()
	t0 := time.Now()
	runs1 := runAll(t, p, tables)
	t.Logf("run 1 of %d adapters: %s", len(tables), time.Since(t0).Round(time.Millisecond))
	v1 := map[string]int64{}
	for _, tb := range tables {
		r := runs1[tb]
		v1[tb] = r.Version
		n := int64(len(before[tb]))
		if r.RowsRead != n || r.Stats.Rows != n || r.Stats.Inserted != n || r.Stats.Updated+r.Stats.Deleted != 0 {
			t.Errorf("run 1 of %s: rows_read %d stats %+v, source has %d rows", tb, r.RowsRead, r.Stats, n)
		}
		d := p.dataset(t, tb)
		if d.CurrentVersion != r.Version {
			t.Errorf("dataset %s: current version %d, run committed %d", tb, d.CurrentVersion, r.Version)
		}
		if strings.Join(d.Current.Schema.Key, ",") != strings.Join(specs[tb].Key, ",") {
			t.Errorf("dataset %s: key %v, source primary key %v", tb, d.Current.Schema.Key, specs[tb].Key)
		}
	}
	t0 = time.Now()
	for _, tb := range tables {
		checkTable(t, p, specs[tb], tb, "", v1[tb], before[tb])
		p.jsonCall(t, http.StatusOK, "PUT", "/v1/datasets/"+tb+"/tags/original", nil, nil)
	}
	t.Logf("read all datasets (pages, NDJSON, point reads): %s", time.Since(t0).Round(time.Millisecond))
	return v1
}

// checkRun2 runs every adapter again after the source changed and checks
// each new version against the changed source, the diff from the first
// version against the source's changes (and the run's stats), and reads of
// the first version by version, tag and as_of against the original source.
// It returns the runs and the tables that changed.
func checkRun2(t *testing.T, p *proc, tables []string, specs2 map[string]tableSpec, before, after map[string]map[string]canonRow, v1 map[string]int64) (map[string]runRecord, []string) {
	t.Helper()
	t0 := time.Now()
	runs2 := runAll(t, p, tables)
	t.Logf("run 2 of %d adapters: %s", len(tables), time.Since(t0).Round(time.Millisecond))
	t0 = time.Now()

	var changed []string
	for _, tb := range tables {
		r := runs2[tb]
		v2 := r.Version
		if r.Verified {
			// Nothing changed: the run recorded the first version verified
			// instead of committing a copy of it (commit_unchanged off).
			checkVerified(t, p, specs2[tb], tb, r, v1[tb], before[tb], after[tb])
			continue
		}
		if v2 <= v1[tb] {
			t.Errorf("%s: run 2 committed version %d, not after %d", tb, v2, v1[tb])
			continue
		}
		// The new version is the changed source, exactly.
		got, ver, _ := p.scanPages(t, specs2[tb], tb, "", 1000)
		if ver != v2 {
			t.Errorf("%s: current read at version %d, run 2 committed %d", tb, ver, v2)
		}
		sameRows(t, tb+" at version 2", after[tb], got)

		// The diff lists exactly the source's changes; the run's stats agree.
		ops := p.checkDiff(t, specs2[tb], tb, v1[tb], v2, before[tb], after[tb])
		ins, upd, del := countOps(ops)
		if r.Stats.Inserted != int64(ins) || r.Stats.Updated != int64(upd) || r.Stats.Deleted != int64(del) || r.Stats.Rows != int64(len(after[tb])) {
			t.Errorf("%s: run 2 stats %+v, the source changed %d inserted, %d updated, %d deleted of %d rows", tb, r.Stats, ins, upd, del, len(after[tb]))
		}
		if len(ops) > 0 {
			changed = append(changed, tb)
			t.Logf("%s: %d inserted, %d updated, %d deleted", tb, ins, upd, del)
		}

		// The first version still reads as the original source, by version,
		// by tag and by as_of, in both encodings.
		vs := p.versions(t, tb)
		if len(vs) != 2 || vs[0].Version != v2 || vs[1].Version != v1[tb] || !vs[0].Current || vs[1].Current {
			t.Errorf("%s: versions %v, want [%d %d] with the first current", tb, versionIDs(vs), v2, v1[tb])
			continue
		}
		if len(vs[1].Tags) != 1 || vs[1].Tags[0] != "original" {
			t.Errorf("%s: version %d tags %v, want [original]", tb, v1[tb], vs[1].Tags)
		}
		mid := vs[1].CommittedAt.Add(vs[0].CommittedAt.Sub(vs[1].CommittedAt) / 2)
		for i, sel := range []string{
			fmt.Sprintf("version=%d", v1[tb]),
			"tag=original",
			"as_of=" + url.QueryEscape(mid.UTC().Format(time.RFC3339Nano)),
		} {
			var got map[string]canonRow
			var ver int64
			how := "pages"
			if i == 1 {
				how = "ndjson"
				got, ver = p.scanNDJSON(t, specs2[tb], tb, sel)
			} else {
				got, ver, _ = p.scanPages(t, specs2[tb], tb, sel, 1000)
			}
			if ver != v1[tb] {
				t.Errorf("%s %s (%s): read at version %d, want %d", tb, sel, how, ver, v1[tb])
			}
			sameRows(t, tb+" "+sel+" ("+how+")", before[tb], got)
		}
	}
	t.Logf("checked run 2, diffs and reads at the first version: %s", time.Since(t0).Round(time.Millisecond))
	return runs2, changed
}

// checkVerified checks a run that found dataset tb unchanged since version
// v1: the source did not change, the run says so in its record and stats,
// the dataset keeps one version, verified at the run's end, which reads as
// the source.
func checkVerified(t *testing.T, p *proc, spec tableSpec, tb string, r runRecord, v1 int64, before, after map[string]canonRow) {
	t.Helper()
	if ops := expectedChanges(before, after); len(ops) > 0 {
		t.Errorf("%s: run 2 found the source unchanged, but it changed %d rows", tb, len(ops))
	}
	if r.Version != v1 || r.Stats.Rows != int64(len(after)) || r.Stats.Unchanged != r.Stats.Rows || r.Stats.Inserted+r.Stats.Updated+r.Stats.Deleted != 0 {
		t.Errorf("%s: verified run 2: version %d stats %+v, want version %d, %d rows unchanged", tb, r.Version, r.Stats, v1, len(after))
	}
	vs := p.versions(t, tb)
	if len(vs) != 1 || vs[0].Version != v1 || !vs[0].Current {
		t.Errorf("%s: versions %v after a verified run, want [%d]", tb, versionIDs(vs), v1)
		return
	}
	if ended, err := time.Parse(time.RFC3339Nano, r.EndedAt); vs[0].VerifiedAt == nil || err != nil || vs[0].VerifiedAt.After(ended) || !vs[0].VerifiedAt.After(vs[0].CommittedAt) {
		t.Errorf("%s: version %d committed at %s verified at %v, the run ended at %s", tb, v1, vs[0].CommittedAt, vs[0].VerifiedAt, r.EndedAt)
	}
	got, ver, _ := p.scanPages(t, spec, tb, "", 1000)
	if ver != v1 {
		t.Errorf("%s: current read at version %d, want the verified %d", tb, ver, v1)
	}
	sameRows(t, tb+" verified", after, got)
}

func hasColumn(v versionInfo, name string) bool {
	for _, c := range v.Schema.Columns {
		if c.Name == name {
			return true
		}
	}
	return false
}

// paymentOfRental4 finds the canonical payment_id of the payment of rental 4.
func paymentOfRental4(t *testing.T, payments map[string]canonRow) string {
	for _, r := range payments {
		if r["rental_id"] == "num:4" {
			return r["payment_id"]
		}
	}
	t.Fatal("fixture: no payment of rental 4")
	return ""
}

// checkTable reads dataset at sel (current if empty) as JSON pages and as
// NDJSON, and a few rows by key, and compares all with want.
func checkTable(t *testing.T, p *proc, spec tableSpec, dataset, sel string, version int64, want map[string]canonRow) {
	t.Helper()
	limit := 500
	got, ver, pages := p.scanPages(t, spec, dataset, sel, limit)
	if ver != version {
		t.Errorf("%s: paged read at version %d, want %d", dataset, ver, version)
	}
	if wantPages := (len(want) + limit - 1) / limit; pages < wantPages || pages > wantPages+1 {
		t.Errorf("%s: %d pages of %d rows for %d rows", dataset, pages, limit, len(want))
	}
	sameRows(t, dataset+" (pages)", want, got)
	got, ver = p.scanNDJSON(t, spec, dataset, sel)
	if ver != version {
		t.Errorf("%s: NDJSON read at version %d, want %d", dataset, ver, version)
	}
	sameRows(t, dataset+" (ndjson)", want, got)

	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keyLess(keys[i], keys[j]) })
	for _, k := range []string{keys[0], keys[len(keys)/2], keys[len(keys)-1]} {
		row, ver, r := p.getRow(t, spec, dataset, want[k], sel)
		if row == nil {
			t.Errorf("%s: row %s: status %d: %s", dataset, k, r.status, r.body)
			continue
		}
		if ver != version {
			t.Errorf("%s: row %s at version %d, want %d", dataset, k, ver, version)
		}
		if d := rowDiff(want[k], row); d != "" {
			t.Errorf("%s: row %s: %s", dataset, k, d)
		}
	}
}

// runAll runs the adapters, two at a time, and requires every run to
// succeed.
func runAll(t *testing.T, p *proc, adapters []string) map[string]runRecord {
	t.Helper()
	var mu sync.Mutex
	out := map[string]runRecord{}
	var errs []string
	work := make(chan string)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a := range work {
				rec, err := p.runWait(a)
				mu.Lock()
				switch {
				case err != nil:
					errs = append(errs, err.Error())
				case rec.Status != "succeeded" || rec.Version == 0:
					errs = append(errs, fmt.Sprintf("run of %s: status %q version %d error %q", a, rec.Status, rec.Version, rec.Error))
				default:
					out[a] = rec
				}
				mu.Unlock()
			}
		}()
	}
	for _, a := range adapters {
		work <- a
	}
	close(work)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("runs failed:\n%s", strings.Join(errs, "\n"))
	}
	return out
}

// checkSecrets creates a connection with a literal password and one with a
// wrong literal password: no response shows either (proc.call checks every
// body, cleanup every log line), the wrong one fails its test with a clear
// cause, and an adapter on the literal one runs.
func checkSecrets(t *testing.T, p *proc, e mysqlEnv, dbName string) {
	t.Helper()
	const wrong = "e2e-wrong-password-5f3a"
	p.addSecret(wrong)
	for name, pw := range map[string]string{"literal": e.Password, "wrong": wrong} {
		var c struct {
			Options map[string]any `json:"options"`
		}
		p.jsonCall(t, http.StatusCreated, "POST", "/v1/connections", map[string]any{
			"name": name, "type": "mysql",
			"options": map[string]any{"host": e.Host, "port": atoi(t, e.Port), "user": e.User, "password": pw, "database": dbName},
		}, &c)
		if c.Options["password"] == nil {
			t.Errorf("connection %s: the password option is not listed (redacted) at all: %v", name, c.Options)
		}
	}
	var list struct {
		Connections []struct {
			Name    string         `json:"name"`
			Options map[string]any `json:"options"`
		} `json:"connections"`
	}
	p.jsonCall(t, http.StatusOK, "GET", "/v1/connections", nil, &list)
	if len(list.Connections) != 3 {
		t.Errorf("GET /v1/connections: %d connections, want 3", len(list.Connections))
	}
	var res struct {
		OK      bool   `json:"ok"`
		Cause   string `json:"cause"`
		Message string `json:"message"`
	}
	p.jsonCall(t, http.StatusOK, "POST", "/v1/connections/literal/test", nil, &res)
	if !res.OK {
		t.Errorf("connection literal: test failed: %+v", res)
	}
	p.jsonCall(t, http.StatusOK, "POST", "/v1/connections/wrong/test", nil, &res)
	if res.OK || res.Message == "" {
		t.Errorf("connection wrong: test %+v, want a failure with a message", res)
	}
	t.Logf("test of a wrong password: cause %q, message %q", res.Cause, res.Message)
	for name, want := range map[string]string{"literal": "succeeded", "wrong": "failed"} {
		p.createAdapter(t, map[string]any{"name": "language_" + name, "connection": name, "resource": "language", "dataset": "language_" + name})
		rec, err := p.runWait("language_" + name)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Status != want {
			t.Errorf("run through connection %s: status %q error %q, want %s", name, rec.Status, rec.Error, want)
		}
		if want == "failed" {
			t.Logf("run with a wrong password: error %q", rec.Error)
		}
	}
}
