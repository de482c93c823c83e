package adapters

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/snapstore/snapstore/api"
)

// TestAdapterRecord_StoredFormat: a definition's record keeps the stored
// encoding (durations in nanoseconds, unset flags omitted) whatever the
// wire schema writes, and reads back as the definition it was.
func TestAdapterRecord_StoredFormat(t *testing.T) {
	spec := api.Adapter{
		Name: "a", Connection: "c", Resource: "t", Dataset: "d", KeyColumns: []string{"id"},
		Retention:    api.Retention{TTL: api.Duration(24 * time.Hour), MinVersions: 2},
		Guard:        api.Guard{MaxShrink: 0.5},
		Retries:      3,
		RetryBackoff: api.Duration(10 * time.Second),
		Strategy:     string(StrategyRoundRobin),
	}
	b, err := json.Marshal(adapterRecordOf(spec))
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"name":"a","connection":"c","resource":"t","dataset":"d","key_columns":["id"],` +
		`"retention":{"ttl":86400000000000,"min_versions":2},"guard":{"allow_empty":false,"max_shrink":0.5},` +
		`"retries":3,"retry_backoff":10000000000,"strategy":"round-robin"}`
	if string(b) != want {
		t.Errorf("stored form\n got %s\nwant %s", b, want)
	}
	var r adapterRecord
	if err := json.Unmarshal([]byte(want), &r); err != nil {
		t.Fatal(err)
	}
	if got := r.spec(); !reflect.DeepEqual(got, spec) {
		t.Errorf("read back %+v, want %+v", got, spec)
	}
}

// TestAdapterRecord_Notify: a notify list is stored when given, [] (none)
// kept apart from absent (notify.default).
func TestAdapterRecord_Notify(t *testing.T) {
	for _, tc := range []struct {
		list []string
		want string
	}{
		{nil, ``},
		{[]string{}, `,"notify":[]`},
		{[]string{"ops", "chat"}, `,"notify":["ops","chat"]`},
	} {
		spec := api.Adapter{Name: "a", Connection: "c", Resource: "t", Notify: tc.list}
		b, err := json.Marshal(adapterRecordOf(spec))
		if err != nil {
			t.Fatal(err)
		}
		want := `{"name":"a","connection":"c","resource":"t","retention":{"ttl":0,"min_versions":0},"guard":{"allow_empty":false,"max_shrink":0}` + tc.want + `}`
		if string(b) != want {
			t.Errorf("stored form\n got %s\nwant %s", b, want)
		}
		var r adapterRecord
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if got := r.spec(); !reflect.DeepEqual(got, spec) {
			t.Errorf("read back %#v, want %#v", got.Notify, spec.Notify)
		}
	}
}
