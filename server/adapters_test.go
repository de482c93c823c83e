package server

import (
	"strings"
	"testing"
)

// TestAdapter_DatasetTakenIsConflict: a second adapter on a dataset is a
// 409 dataset_taken naming the field dataset.
func TestAdapter_DatasetTakenIsConflict(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	p := f.wantProblem(409, "dataset_taken", "dataset", "POST", "/v1/adapters", `{"name":"second","connection":"shop","resource":"notes","dataset":"notes"}`)
	if !strings.Contains(p.Detail, `"notes"`) {
		t.Errorf("detail does not name the other adapter: %q", p.Detail)
	}
	f.wantProblem(409, "dataset_taken", "dataset", "PUT", "/v1/adapters/second", `{"connection":"shop","resource":"notes","dataset":"notes"}`)
}
