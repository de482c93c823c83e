package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestBackupRecipe runs the cold backup recipe of docs/operations.md, as
// written after its DATA and PID lines, on a server with a committed
// version: it waits for the process to exit, and the archive restored
// elsewhere is a data directory that the CLI reads, the version there.
// Then it runs the restore recipe over the server's own directory, after
// a tag made since the backup: the server started again has the backup's
// state, without the tag (unpacking over the directory would keep it).
func TestBackupRecipe(t *testing.T) {
	e := getMySQLEnv(t)
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)# backup recipe\n(.*?)# then start snapstore again").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/operations.md has no backup recipe between '# backup recipe' and '# then start snapstore again'")
	}
	recipe := string(m[1])
	dbName := fmt.Sprintf("e2e_backup_%d", os.Getpid())
	e.cloneTable(t, dbName, "category")
	p := startServer(t, e.Password)
	p.createMySQLConnection(t, "src", e.Host, e.Port, e.User, dbName)
	p.createAdapter(t, map[string]any{"name": "category", "connection": "src", "resource": "category"})
	want := p.mustRun(t, "category").Version

	work := t.TempDir()
	sh := exec.Command("bash", "-euc", recipe)
	sh.Dir = work
	sh.Env = []string{"PATH=" + os.Getenv("PATH"), "DATA=" + filepath.Join(p.dir, "data"), fmt.Sprintf("PID=%d", p.cmd.Process.Pid)}
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("the recipe: %v\n%s", err, out)
	}
	select {
	case <-p.exited:
		p.cmd = nil
	default:
		t.Fatal("the recipe returned while the server still ran")
	}
	archives, _ := filepath.Glob(filepath.Join(work, "snapstore-*.tar.gz"))
	if len(archives) != 1 {
		t.Fatalf("archives: %v", archives)
	}
	restored := t.TempDir()
	if out, err := exec.Command("tar", "-C", restored, "-xzf", archives[0]).CombinedOutput(); err != nil {
		t.Fatalf("extracting: %v\n%s", err, out)
	}
	out, err := exec.Command(binPath, "versions", "category", "--data", filepath.Join(restored, "data"), "--output", "json").CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf(`"version": %d`, want)) {
		t.Fatalf("reading the restored copy: %v\n%s", err, out)
	}
	if !strings.Contains(p.logTail(5), "stopped cleanly") {
		t.Errorf("the server did not stop cleanly:\n%s", p.logTail(10))
	}

	m = regexp.MustCompile("(?s)# restore recipe\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/operations.md has no restore recipe after '# restore recipe'")
	}
	restore := string(m[1])
	name := regexp.MustCompile(`snapstore-[0-9-]+\.tar\.gz`).FindString(restore)
	if name == "" {
		t.Fatalf("the restore recipe names no archive:\n%s", restore)
	}
	if err := os.Rename(archives[0], filepath.Join(work, name)); err != nil {
		t.Fatal(err)
	}
	p.start()
	tagged := "/v1/datasets/category/rows?tag=after-backup&limit=1"
	if r, err := p.call("PUT", "/v1/datasets/category/tags/after-backup", nil); err != nil || r.status != 200 {
		t.Fatalf("tagging after the backup: %v %d %s", err, r.status, r.body)
	}
	if r, err := p.call("GET", tagged, nil); err != nil || r.status != 200 {
		t.Fatalf("reading the new tag: %v %d %s", err, r.status, r.body)
	}
	p.stop()
	sh = exec.Command("bash", "-euc", restore)
	sh.Dir = work
	sh.Env = []string{"PATH=" + os.Getenv("PATH"), "DATA=" + filepath.Join(p.dir, "data")}
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("the restore recipe: %v\n%s", err, out)
	}
	p.start()
	if r, err := p.call("GET", tagged, nil); err != nil || r.status != 404 || !strings.Contains(string(r.body), "tag_not_found") {
		t.Errorf("after the restore, the tag made since the backup: %v %d %s", err, r.status, r.body)
	}
	if r, err := p.call("GET", fmt.Sprintf("/v1/datasets/category/rows?version=%d&limit=1", want), nil); err != nil || r.status != 200 {
		t.Errorf("after the restore, version %d: %v %d %s", want, err, r.status, r.body)
	}
}
