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
}
