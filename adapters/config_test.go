package adapters

import (
	"errors"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/api"
)

// TestValidateConfig_EveryProblemAtOnce: one call names every bad key of a
// config file (A4), with no follow-on error for an adapter whose
// connection the file defines but rejected.
func TestValidateConfig_EveryProblemAtOnce(t *testing.T) {
	path := newSQLiteFixture(t)
	errs := ValidateConfig(
		[]api.Connection{
			{Name: "shop", Type: "sqlite", Options: map[string]any{"pth": path}},
			{Name: "ok", Type: "sqlite", Options: map[string]any{"path": path}},
			{Name: "ok", Type: "sqlite", Options: map[string]any{"path": path}},
		},
		[]api.Adapter{
			{Name: "a", Connection: "shop", Resource: "items", Schedule: "every 15s", Guard: api.Guard{MaxShrink: 2}},
			{Name: "b", Connection: "nope", Resource: "items"},
			{Name: "c", Connection: "ok", Resource: "items", Dataset: "shared"},
			{Name: "d", Connection: "ok", Resource: "items", Dataset: "shared"},
			{Name: "e", Connection: "ok", Resource: "items", Retention: api.Retention{MinVersions: -1}},
		})
	keys := map[string]error{}
	for _, err := range errs {
		var oe *OptionError
		if !errors.As(err, &oe) {
			t.Errorf("problem %v is not an *OptionError", err)
			continue
		}
		if _, dup := keys[oe.Key]; dup {
			t.Errorf("key %s reported twice", oe.Key)
		}
		keys[oe.Key] = err
	}
	want := []string{
		"connections[0].options.pth", "connections[0].options.path", "connections[2].name",
		"adapters[0].schedule", "adapters[0].guard.max_shrink", "adapters[1].connection",
		"adapters[3].dataset", "adapters[4].retention.min_versions",
	}
	for _, k := range want {
		if keys[k] == nil {
			t.Errorf("no problem for %s; got %v", k, errs)
		}
	}
	if len(keys) != len(want) {
		t.Errorf("got %d problems, want %d: %v", len(keys), len(want), errs)
	}
	if _, ok := keys["adapters[0].connection"]; ok {
		t.Errorf("follow-on error for a rejected connection: %v", keys["adapters[0].connection"])
	}
	if err := keys["adapters[0].schedule"]; err != nil && !errors.Is(err, ErrBadSchedule) {
		t.Errorf("schedule problem %v is not ErrBadSchedule", err)
	}
	if err := keys["adapters[1].connection"]; err != nil && !errors.Is(err, ErrConnectionNotFound) {
		t.Errorf("connection problem %v is not ErrConnectionNotFound", err)
	}
	if err := keys["adapters[3].dataset"]; err != nil && (!errors.Is(err, ErrDatasetTaken) || !strings.Contains(err.Error(), `"c"`)) {
		t.Errorf("dataset problem %v is not ErrDatasetTaken naming adapter c", err)
	}
	if errs := ValidateConfig([]api.Connection{{Name: "ok", Type: "sqlite", Options: map[string]any{"path": path}}},
		[]api.Adapter{{Name: "a", Connection: "ok", Resource: "items"}}); len(errs) != 0 {
		t.Errorf("a good config: %v", errs)
	}
}

// TestValidateConfig_SourceOptions: an adapter's source_options are
// checked against its connection type's read options, each problem named
// by its place in the file; a type without read options refuses them.
func TestValidateConfig_SourceOptions(t *testing.T) {
	path := newSQLiteFixture(t)
	conns := []api.Connection{
		{Name: "local", Type: "sqlite", Options: map[string]any{"path": path}},
		{Name: "edge", Type: "snapstore", Options: map[string]any{"url": "https://edge1:8080"}},
	}
	errs := ValidateConfig(conns, []api.Adapter{
		{Name: "a", Connection: "local", Resource: "items", SourceOptions: map[string]any{"columns": []any{"id"}}},
		{Name: "b", Connection: "edge", Resource: "items", SourceOptions: map[string]any{"columns": []any{"id", "id"}, "colour": "red"}},
		{Name: "c", Connection: "edge", Resource: "items", SourceOptions: map[string]any{"start": 7, "end": []any{}, "columns": map[string]any{}}},
		{Name: "d", Connection: "edge", Resource: "items", SourceOptions: map[string]any{"columns": []any{"id", "name"}, "start": []any{"EU"}, "end": []any{"EU", 100}}},
	})
	var keys []string
	for _, err := range errs {
		var oe *OptionError
		if !errors.As(err, &oe) {
			t.Fatalf("problem %v is not an *OptionError", err)
		}
		keys = append(keys, oe.Key)
	}
	want := "adapters[0].source_options adapters[1].source_options.colour adapters[1].source_options.columns adapters[2].source_options.columns adapters[2].source_options.end"
	if strings.Join(keys, " ") != want {
		t.Errorf("problems at %v, want %s: %v", keys, want, errs)
	}
	if len(errs) > 0 && !strings.Contains(errs[0].Error(), `type "sqlite" takes no source_options`) {
		t.Errorf("source_options of a sqlite adapter: %v", errs[0])
	}
}
