package config

import (
	"strings"
	"testing"

	"github.com/snapstore/snapstore/cluster"
)

// clusterFile is a config file of a cluster node on HBase.
const clusterFile = `storage: {backend: hbase, hbase: {thrift: "127.0.0.1:9090"}}
cluster:
  bind: 127.0.0.1:7946
  join: [127.0.0.2:7946]
`

func TestClusterConfig_NoKeysNoCluster(t *testing.T) {
	cfg := Default()
	if cfg.Clustered() {
		t.Fatal("the defaults make a cluster")
	}
	// The annotated sample writes every cluster key at its default: valid.
	sample, err := Load(Flags{File: "../docs/snapstore.sample.yaml"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sample.Clustered() {
		t.Error("the sample makes a cluster")
	}
}

// TestClusterConfig_ErrorsWithTheOthers checks that the cluster keys'
// problems come in the one report of every bad key: a cluster on Pebble,
// keys set without cluster.bind, a gossip key required off loopback, a bad
// weight, preset and join address, next to a bad log level.
func TestClusterConfig_ErrorsWithTheOthers(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"pebble", "log: {level: loud}\ncluster: {bind: 127.0.0.1:7946}\n", []string{
			"config key log.level (line 1)",
			"config key cluster.bind (line 2): a cluster needs storage.backend hbase",
		}},
		{"no bind", "cluster: {weight: 5, zone: a}\n", []string{
			"config key cluster.weight (line 1): set cluster.bind to run a cluster",
			"config key cluster.zone (line 1): set cluster.bind",
		}},
		{"off loopback", "storage: {backend: hbase, hbase: {thrift: \"127.0.0.1:9090\"}}\nlog: {level: loud}\ncluster:\n  bind: 0.0.0.0:7946\n  weight: 0\n  preset: fast\n  join: [nohost]\n", []string{
			"config key log.level (line 2)",
			"config key cluster.gossip_key_file (line 3): required when gossip binds or advertises off loopback",
			"config key cluster.weight (line 5): want 1 to 10000, got 0",
			"config key cluster.preset (line 6): want default or loopback",
			"config key cluster.join[0] (line 7): want host:port",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(Flags{File: writeFile(t, "c.yaml", tc.file)}, nil)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("no %q in:\n%v", w, err)
				}
			}
		})
	}
}

// TestClusterConfig_GossipKeyFile checks the key file: read and decoded,
// a missing or bad file named by its key, and the key's text never in an
// error.
func TestClusterConfig_GossipKeyFile(t *testing.T) {
	key := cluster.GenerateKey()
	good := writeFile(t, "key", key+"\n")
	cfg, err := Load(Flags{File: writeFile(t, "c.yaml", clusterFile+"  gossip_key_file: "+good+"\n")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	mc, err := cfg.MembershipConfig("127.0.0.1:8080", "", nil, nil)
	if err != nil || len(mc.GossipKey) != 32 || mc.Bind != "127.0.0.1:7946" || mc.Join[0] != "127.0.0.2:7946" || mc.Weight != 100 || mc.ConfirmFailure.String() != "30s" {
		t.Fatalf("%+v %v", mc, err)
	}
	bad := "c2hvcnQta2V5"
	// /dev/zero: read up to a bound, not until the memory runs out.
	for _, f := range []string{writeFile(t, "short", bad+"\n"), writeFile(t, "text", "not base64 at all\n"), t.TempDir() + "/missing", "/dev/zero"} {
		_, err := Load(Flags{File: writeFile(t, "c.yaml", clusterFile+"  gossip_key_file: "+f+"\n")}, nil)
		if err == nil || !strings.Contains(err.Error(), "config key cluster.gossip_key_file (line 5)") {
			t.Errorf("%s: %v", f, err)
		}
		if err != nil && (strings.Contains(err.Error(), bad) || strings.Contains(err.Error(), "not base64 at all")) {
			t.Errorf("the error shows the key: %v", err)
		}
	}
}

func TestClusterConfig_Environment(t *testing.T) {
	cfg, err := Load(Flags{File: writeFile(t, "c.yaml", clusterFile)}, []string{
		"SNAPSTORE_CLUSTER_JOIN=127.0.0.2:7946,127.0.0.3:7946",
		"SNAPSTORE_CLUSTER_ADVERTISE_API=127.0.0.1:9999",
		"SNAPSTORE_CLUSTER_CONFIRM_FAILURE=5s",
		"SNAPSTORE_CLUSTER_PRESET=loopback",
	})
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Cluster
	if len(c.Join) != 2 || c.Join[1] != "127.0.0.3:7946" || c.AdvertiseAPI != "127.0.0.1:9999" || c.ConfirmFailure.String() != "5s" || c.Preset != "loopback" {
		t.Fatalf("%+v", c)
	}
}

func TestClusterConfig_APIAddress(t *testing.T) {
	for _, tc := range []struct {
		cc           ClusterConfig
		listen, want string
		wantErr      bool
	}{
		{ClusterConfig{Bind: "127.0.0.1:7946"}, "127.0.0.1:8080", "127.0.0.1:8080", false},
		{ClusterConfig{Bind: "10.0.0.5:7946"}, "0.0.0.0:8080", "10.0.0.5:8080", false},
		{ClusterConfig{Bind: "0.0.0.0:7946", Advertise: "10.0.0.6:7946"}, ":8080", "10.0.0.6:8080", false},
		{ClusterConfig{Bind: "0.0.0.0:7946", AdvertiseAPI: "api.example:443"}, "0.0.0.0:8080", "api.example:443", false},
		{ClusterConfig{Bind: "0.0.0.0:7946"}, "0.0.0.0:8080", "", true},
	} {
		got, err := APIAddress(tc.cc, tc.listen)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("%+v %s: %q %v", tc.cc, tc.listen, got, err)
		}
	}
}
