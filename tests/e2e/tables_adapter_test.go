package e2e

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestTablesAdapterRefusals drives the built binary over MariaDB: the
// refusals of an adapter of several tables that would otherwise be saved
// and then fail every run with the unclassified code error, or blame a
// field the body does not have.
//   - A table whose name in the dataset (database.table) is over 200
//     bytes: 400 bad_option when saved, bad_selection in a run of an
//     adapter saved before it appeared; excluded, the rest is read.
//   - A resource of several the source lacks: 404 resource_not_found
//     naming resources[i].
//   - An adapter replaced by one of the other kind (one resource,
//     several tables) on the dataset it wrote: 400 bad_option naming
//     dataset, the adapter and its runs unchanged.
func TestTablesAdapterRefusals(t *testing.T) {
	e := getMySQLEnv(t)
	// 64 bytes of database name, the most MariaDB takes, and a table of
	// 50 three-byte characters: 215 bytes as database.table.
	dbName := fmt.Sprintf("e2e_tablenames_%d_", os.Getpid())
	dbName += strings.Repeat("x", 64-len(dbName))
	long := strings.Repeat("€", 50)
	root := e.open(t, "")
	for _, q := range []string{
		"DROP DATABASE IF EXISTS `" + dbName + "`",
		"CREATE DATABASE `" + dbName + "`",
		"CREATE TABLE `" + dbName + "`.orders (id INT PRIMARY KEY)",
		"INSERT INTO `" + dbName + "`.orders VALUES (1), (2)",
	} {
		if _, err := root.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { root.Exec("DROP DATABASE IF EXISTS `" + dbName + "`") })

	p := startServer(t, e.Password)
	p.createMySQLConnection(t, "src", e.Host, e.Port, e.User, dbName)
	p.createAdapter(t, map[string]any{"name": "all", "connection": "src", "include": []string{"*"}})
	first := p.mustRun(t, "all")

	if _, err := root.Exec("CREATE TABLE `" + dbName + "`.`" + long + "` (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	r, err := p.runWait("all")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "failed" || r.Code != "bad_selection" || !strings.Contains(r.Error, "must have 1 to 200 bytes") {
		t.Errorf("run selecting a table of a %d-byte name: %s %s: %s", len(dbName)+1+len(long), r.Status, r.Code, r.Error)
	}
	if d := p.dataset(t, "all"); d.CurrentVersion != first.Version {
		t.Errorf("current version %d after the refused run, want %d", d.CurrentVersion, first.Version)
	}
	pr := wantProblem(t, "an adapter selecting that table", p.mustCall(t, http.StatusBadRequest, "POST", "/v1/adapters",
		map[string]any{"name": "all2", "connection": "src", "include": []string{"*"}}), http.StatusBadRequest, "bad_option")
	if !strings.Contains(pr.Detail, "must have 1 to 200 bytes") {
		t.Errorf("detail %q does not say why", pr.Detail)
	}
	p.mustCall(t, http.StatusOK, "PUT", "/v1/adapters/all",
		map[string]any{"connection": "src", "include": []string{"*"}, "exclude": []string{"€*"}})
	p.mustRun(t, "all")

	missing := p.mustCall(t, http.StatusNotFound, "POST", "/v1/adapters",
		map[string]any{"name": "named", "connection": "src", "resources": []string{"orders", "ordrs"}})
	wantProblem(t, "a missing resource of several", missing, http.StatusNotFound, "resource_not_found")
	if !strings.Contains(string(missing.body), `"field":"resources[1]"`) {
		t.Errorf("a missing resource of several does not blame resources[1]: %s", missing.body)
	}

	p.createAdapter(t, map[string]any{"name": "one", "connection": "src", "resource": "orders"})
	p.mustRun(t, "one")
	other := p.mustCall(t, http.StatusBadRequest, "PUT", "/v1/adapters/one",
		map[string]any{"connection": "src", "resources": []string{"orders"}})
	wantProblem(t, "an adapter of several tables on a dataset of one", other, http.StatusBadRequest, "bad_option")
	if !strings.Contains(string(other.body), `"field":"dataset"`) {
		t.Errorf("the other kind does not blame dataset: %s", other.body)
	}
	p.mustRun(t, "one")
}
