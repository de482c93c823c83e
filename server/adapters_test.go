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

// TestAdapter_IncludeOfNoTable: an adapter whose include matches no table
// of a source that answers is a 404 resource_not_found blaming include,
// its detail naming the patterns; a missing resource still blames
// resource, and one of several resources blames it by its index.
func TestAdapter_IncludeOfNoTable(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	p := f.wantProblem(404, "resource_not_found", "include", "POST", "/v1/adapters", `{"name":"typo","connection":"shop","include":["prodcts","ordrs"]}`)
	if !strings.Contains(p.Detail, `no table matches include ["prodcts" "ordrs"]`) || strings.Contains(p.Detail, "adapters: ") {
		t.Errorf("detail %q", p.Detail)
	}
	f.wantProblem(404, "resource_not_found", "resource", "POST", "/v1/adapters", `{"name":"typo","connection":"shop","resource":"prodcts"}`)
	p = f.wantProblem(404, "resource_not_found", "resources[1]", "POST", "/v1/adapters", `{"name":"typo","connection":"shop","resources":["products","ordrs"]}`)
	if !strings.Contains(p.Detail, `"ordrs"`) || strings.Contains(p.Detail, "adapters: ") {
		t.Errorf("detail %q", p.Detail)
	}
}
