package main

import (
	"testing"

	"github.com/snapstore/snapstore/cluster"
)

func TestClusterCommand_Usage(t *testing.T) {
	if code, out, _ := cli(t, "cluster", "keygen"); code != 0 {
		t.Fatalf("keygen: %d", code)
	} else if _, err := cluster.ParseKey(out); err != nil {
		t.Fatalf("keygen printed %q: %v", out, err)
	}
	for _, args := range [][]string{{"cluster"}, {"cluster", "frob"}, {"cluster", "nodes", "extra"}} {
		if code, _, _ := cli(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
