package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"testing"
	"time"
)

// TestSakilaTables keeps a clone of Sakila as one dataset of all its
// tables, through the built binary: every table at the first version
// equals the source, the source changes (sakilaChanges: rows of eleven
// tables, a column added), and every table at the second version equals
// the changed source while the first version still reads as before.
func TestSakilaTables(t *testing.T) {
	e := getMySQLEnv(t)
	start := time.Now()
	dbName := fmt.Sprintf("e2e_sakila_tables_%d", os.Getpid())
	e.cloneSakila(t, dbName)
	src := e.open(t, dbName)
	tables := baseTables(t, src, dbName)
	if len(tables) != 16 {
		t.Fatalf("sakila has %d base tables, want 16: %v", len(tables), tables)
	}
	read := func() (map[string]tableSpec, map[string]map[string]canonRow) {
		specs, rows := map[string]tableSpec{}, map[string]map[string]canonRow{}
		for _, tb := range tables {
			specs[tb] = loadSpec(t, src, dbName, tb)
			rows[tb] = specs[tb].read(t, src)
		}
		return specs, rows
	}
	specs1, before := read()

	p := startServer(t, e.Password)
	p.createMySQLConnection(t, "sakila", e.Host, e.Port, e.User, dbName)
	p.createAdapter(t, map[string]any{"name": "sakila", "connection": "sakila", "include": []string{"*"}, "parallelism": 3})
	check := func(what string, v int64, specs map[string]tableSpec, want map[string]map[string]canonRow) {
		t.Helper()
		var list struct {
			Tables []struct {
				Name string `json:"name"`
			} `json:"tables"`
		}
		p.jsonCall(t, http.StatusOK, "GET", fmt.Sprintf("/v1/datasets/sakila/tables?version=%d", v), nil, &list)
		var names []string
		for _, tb := range list.Tables {
			names = append(names, tb.Name)
		}
		var wantNames []string
		for _, tb := range tables {
			wantNames = append(wantNames, dbName+"."+tb)
		}
		slices.Sort(wantNames)
		if !slices.Equal(names, wantNames) {
			t.Fatalf("%s: version %d holds tables %v, want %v", what, v, names, wantNames)
		}
		n := 0
		for _, tb := range tables {
			got, ver := p.scanNDJSONPath(t, specs[tb], "/v1/datasets/sakila/tables/"+url.PathEscape(dbName+"."+tb)+"/rows", fmt.Sprintf("version=%d", v))
			if ver != v {
				t.Errorf("%s: %s read at version %d, want %d", what, tb, ver, v)
			}
			sameRows(t, fmt.Sprintf("%s: %s at version %d", what, tb, v), want[tb], got)
			n += len(got)
		}
		t.Logf("%s: version %d, %d tables, %d rows equal to the source", what, v, len(tables), n)
	}

	r1 := p.mustRun(t, "sakila")
	check("first run", r1.Version, specs1, before)

	execAll(t, src, sakilaChanges)
	specs2, after := read()
	r2 := p.mustRun(t, "sakila")
	if r2.Version <= r1.Version {
		t.Fatalf("second run: version %d after %d", r2.Version, r1.Version)
	}
	check("second run", r2.Version, specs2, after)
	check("first version after the second run", r1.Version, specs1, before)
	t.Logf("whole test: %s", time.Since(start).Round(time.Millisecond))
}
