package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/snapstore/snapstore/internal/testenv"
)

// binPath is the snapstore binary built once by TestMain; empty under
// -short or when no test service is configured (every test then skips).
var binPath string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	_, mysql := testenv.LookupMySQL()
	_, postgres := testenv.LookupPostgres()
	_, hbase := testenv.LookupHBaseThrift()
	if testing.Short() || !mysql && !postgres && !hbase {
		return m.Run() // the tests skip with the reason
	}
	dir, err := os.MkdirTemp("", "snapstore-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binPath = filepath.Join(dir, "snapstore")
	build := exec.Command("go", "build", "-o", binPath, "github.com/snapstore/snapstore/cmd/snapstore")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building cmd/snapstore:", err)
		return 1
	}
	return m.Run()
}
