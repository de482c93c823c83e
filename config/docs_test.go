package config

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// configKeys lists every key path of t: "storage.hbase.thrift",
// "adapters[].retention.ttl". Maps (connection options) end the walk.
func configKeys(t reflect.Type, prefix string) []string {
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		k := yamlKey(t.Field(i))
		if k == "" {
			continue
		}
		key := prefix + k
		ft := t.Field(i).Type
		switch {
		case ft.Kind() == reflect.Struct && !isDuration(ft):
			keys = append(keys, configKeys(ft, key+".")...)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			keys = append(keys, configKeys(ft.Elem(), key+"[].")...)
		default:
			keys = append(keys, key)
		}
	}
	return keys
}

// TestDocs_EveryConfigKey fails when a configuration key is missing from
// docs/config.md or from the annotated sample (Thanos's check-docs).
func TestDocs_EveryConfigKey(t *testing.T) {
	md, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	sample, err := os.ReadFile("../docs/snapstore.sample.yaml")
	if err != nil {
		t.Fatal(err)
	}
	keys := configKeys(reflect.TypeOf(Config{}), "")
	if len(keys) < 30 {
		t.Fatalf("only %d keys: %v", len(keys), keys)
	}
	for _, k := range keys {
		if !strings.Contains(string(md), "`"+k+"`") {
			t.Errorf("docs/config.md does not document `%s`", k)
		}
		leaf := k[strings.LastIndexAny(k, ".]")+1:]
		if !strings.Contains(string(sample), leaf+":") {
			t.Errorf("docs/snapstore.sample.yaml has no %q (for %s)", leaf+":", k)
		}
	}
}
