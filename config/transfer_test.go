package config

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestTransferConfig_ErrorsWithTheOthers checks that the cluster.transfer
// keys' problems come in the one report of every bad key: transfer keys
// without cluster.bind, keys without cluster.transfer.listen, certificate
// files missing, bad counts, next to a bad log level.
func TestTransferConfig_ErrorsWithTheOthers(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"no bind", "log: {level: loud}\ncluster:\n  transfer: {listen: 127.0.0.1:7950, max_workers: 3}\n", []string{
			"config key log.level (line 1)",
			"config key cluster.transfer.listen (line 3): set cluster.bind to run a cluster",
			"config key cluster.transfer.max_workers (line 3): set cluster.bind",
		}},
		{"no listen", clusterFile + "  transfer:\n    ca_file: ca.crt\n    queue_batches: 5\n", []string{
			"config key cluster.transfer.ca_file (line 6): set cluster.transfer.listen",
			"config key cluster.transfer.queue_batches (line 7): set cluster.transfer.listen",
		}},
		{"bad values", "log: {level: loud}\n" + clusterFile + "  transfer:\n    listen: nohost\n    connections_per_node: 0\n    max_workers: 2000\n    queue_memory: 1000\n    owner_wait: 0s\n", []string{
			"config key log.level (line 1)",
			"config key cluster.transfer.listen (line 7): want host:port",
			"config key cluster.transfer.ca_file (line 6): required: nodes exchange rows only over mutual TLS",
			"config key cluster.transfer.cert_file (line 6): required",
			"config key cluster.transfer.key_file (line 6): required",
			"config key cluster.transfer.connections_per_node (line 8): want 1 to 64, got 0",
			"config key cluster.transfer.max_workers (line 9): want 1 to 1024, got 2000",
			"config key cluster.transfer.queue_memory (line 10): want at least 1 MiB",
			"config key cluster.transfer.owner_wait (line 11): must be positive",
		}},
		{"partitions", clusterFile + "  partitions: 4\n  partition_moves: 9\n  partition_move_interval: 1ms\n", []string{
			"config key cluster.partitions (line 5): want 8 to 1024, got 4",
			"config key cluster.partition_moves (line 6): want 0 (partitions/8) to partitions (4), got 9",
			"config key cluster.partition_move_interval (line 7): at least 100ms",
		}},
		{"partitions alone", "cluster:\n  partitions: 64\n", []string{
			"config key cluster.partitions (line 2): set cluster.bind to run a cluster",
		}},
		{"every interface", clusterFile + "  transfer: {listen: \"0.0.0.0:7950\", ca_file: a, cert_file: b, key_file: c}\n", nil},
		{"advertise", "storage: {backend: hbase, hbase: {thrift: \"127.0.0.1:9090\"}}\ncluster:\n  bind: 0.0.0.0:7946\n  gossip_key_file: /nonexistent\n  transfer: {listen: \"0.0.0.0:7950\", ca_file: a, cert_file: b, key_file: c}\n", []string{
			"config key cluster.transfer.advertise (line 5): required when cluster.transfer.listen (0.0.0.0:7950) and the gossip addresses bind every interface",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Load(Flags{File: writeFile(t, "c.yaml", tc.file)}, nil)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if a, err := TransferAddress(cfg.Cluster, cfg.Cluster.Transfer.Listen); err != nil || a != "127.0.0.1:7950" {
					t.Errorf("advertised transfer address %q %v, want the gossip host", a, err)
				}
				return
			}
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
	cfg, err := Load(Flags{File: writeFile(t, "c.yaml", clusterFile)}, []string{
		"SNAPSTORE_CLUSTER_TRANSFER_LISTEN=127.0.0.1:7950", "SNAPSTORE_CLUSTER_TRANSFER_CA_FILE=ca.crt",
		"SNAPSTORE_CLUSTER_TRANSFER_CERT_FILE=n.crt", "SNAPSTORE_CLUSTER_TRANSFER_KEY_FILE=n.key",
		"SNAPSTORE_CLUSTER_TRANSFER_CONNECTIONS_PER_NODE=2", "SNAPSTORE_CLUSTER_TRANSFER_QUEUE_MEMORY=2097152",
	})
	if err != nil {
		t.Fatal(err)
	}
	tc := cfg.TransportConfig("node-a", "inc", nil, nil, nil)
	if tc.Listen != "127.0.0.1:7950" || tc.ConnectionsPerNode != 2 || tc.QueueMemory != 2<<20 || tc.MaxWorkers != 8 || tc.QueueBatches != 100 ||
		tc.Dir != filepath.Join(cfg.Data, "cluster/transfer") || tc.KeyFile != "n.key" {
		t.Errorf("transfer config from the environment: %+v", tc)
	}
}
