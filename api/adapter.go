package api

import (
	"maps"
	"slices"
	"strings"
)

// Adapter defines an adapter: which resource of which data connection
// feeds which dataset, when, and under which retention and guards. It is
// an entry of the config file's adapters list and the body of
// POST /v1/adapters (docs/config.md, docs/api.md).
type Adapter struct {
	// Name names the adapter; in a PUT the path gives it.
	Name       string `json:"name,omitempty" yaml:"name"`
	Connection string `json:"connection" yaml:"connection"`
	// Resource is the source table or view, "table" or "schema.table",
	// for a dataset of one table. Exclusive with Resources, Include and
	// Exclude.
	Resource string `json:"resource" yaml:"resource"`
	// Resources, Include and Exclude name the tables of a dataset of
	// several tables, all read at one point of the source: tables or
	// views by name, and glob patterns on "table" or "schema.table" names
	// (docs/semantics.md).
	Resources []string `json:"resources,omitempty" yaml:"resources"`
	Include   []string `json:"include,omitempty" yaml:"include"`
	Exclude   []string `json:"exclude,omitempty" yaml:"exclude"`
	// AllowDroppedTables lets a run of several tables commit without a
	// table the source no longer holds (absent from the new version,
	// kept by the older ones); default false: the run fails naming it.
	AllowDroppedTables bool `json:"allow_dropped_tables,omitempty" yaml:"allow_dropped_tables"`
	// Parallelism is how many connections a run of several tables reads
	// its tables over; 0: the default of the connection's sharing mode.
	// For one table, the connections of one point of the source its key
	// ranges' checksums are computed over; 0: 1 (docs/connections.md).
	Parallelism int `json:"parallelism,omitempty" yaml:"parallelism"`
	// Dataset is the target dataset; default Name.
	Dataset string `json:"dataset,omitempty" yaml:"dataset"`
	// KeyColumns are the row key's columns; default the primary key.
	KeyColumns []string `json:"key_columns,omitempty" yaml:"key_columns"`
	// TableKeys are the row key's columns of tables of a dataset of
	// several tables, by the table's name in the dataset ("schema.table",
	// "table" for a source without schemas); a table without an entry is
	// keyed by its primary key.
	TableKeys map[string][]string `json:"table_keys,omitempty" yaml:"table_keys"`
	// SourceOptions are options of this adapter's read of its resource,
	// declared by the connection's type (docs/connections.md): for a
	// snapstore dataset, columns and a key range. Most types take none.
	SourceOptions map[string]any `json:"source_options,omitempty" yaml:"source_options"`
	// Schedule is a cron spec (5 fields, optional seconds, CRON_TZ=,
	// @every 30s, @hourly); empty for manual runs only.
	Schedule  string    `json:"schedule,omitempty" yaml:"schedule"`
	Retention Retention `json:"retention" yaml:"retention"`
	Guard     Guard     `json:"guard" yaml:"guard"`
	// Retries is how many times a failed scheduled run is retried.
	Retries int `json:"retries,omitempty" yaml:"retries"`
	// RetryBackoff is the first retry's delay, doubled each retry.
	RetryBackoff Duration `json:"retry_backoff,omitempty" yaml:"retry_backoff"`
	// RunOnStart runs the adapter once when serve starts; default false.
	RunOnStart bool `json:"run_on_start" yaml:"run_on_start"`
	// EmbedJSON serves JSON columns as the documents; default false.
	EmbedJSON bool `json:"embed_json" yaml:"embed_json"`
	// CommitUnchanged commits a version even when nothing changed;
	// default false (the current version is recorded verified).
	CommitUnchanged bool `json:"commit_unchanged" yaml:"commit_unchanged"`
	// AuditReads records every request that reads the dataset's rows in
	// the audit trail, one entry per request; default false.
	AuditReads bool `json:"audit_reads" yaml:"audit_reads"`
	// Strategy is where the runs happen in a cluster: local (default),
	// round-robin, single-node or partition-by-key.
	Strategy string `json:"strategy,omitempty" yaml:"strategy"`
	// TransferCompression is what a partition-by-key run's rows between
	// nodes compress: none (default), metadata or all.
	TransferCompression string `json:"transfer_compression,omitempty" yaml:"transfer_compression"`
	// PartitionKey names the columns that place a partition-by-key run's
	// rows on nodes; default the key columns.
	PartitionKey []string `json:"partition_key,omitempty" yaml:"partition_key"`
	// Notify names the webhooks (notify.webhooks of the configuration)
	// that get the adapter's run notifications; absent (nil):
	// notify.default; empty: none (docs/notifications.md).
	Notify []string `json:"notify,omitzero" yaml:"notify"`
}

// Retention is how long a dataset keeps its versions.
type Retention struct {
	// TTL keeps versions younger than this; 0 keeps all.
	TTL Duration `json:"ttl" yaml:"ttl"`
	// MinVersions is the number of newest versions always kept.
	MinVersions int `json:"min_versions" yaml:"min_versions"`
}

// Guard is what a run may do to a dataset before it is refused.
type Guard struct {
	// AllowEmpty lets a run commit 0 rows.
	AllowEmpty bool `json:"allow_empty" yaml:"allow_empty"`
	// MaxShrink is the largest fraction (0..1) of rows a run may delete.
	MaxShrink float64 `json:"max_shrink" yaml:"max_shrink"`
}

// ManyTables reports whether a names a dataset of several tables: by a
// list of resources or by patterns rather than by Resource.
func (a Adapter) ManyTables() bool {
	return len(a.Resources) > 0 || len(a.Include) > 0 || len(a.Exclude) > 0
}

// TableKeysText is a's table_keys as one line, as the console's form and
// the CLI show it: "table: column, column" entries sorted by table,
// separated by semicolons; "" when there are none.
func (a Adapter) TableKeysText() string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(a.TableKeys)) {
		parts = append(parts, name+": "+strings.Join(a.TableKeys[name], ", "))
	}
	return strings.Join(parts, "; ")
}
