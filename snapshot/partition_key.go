package snapshot

// Partition keys (doc.go, "Partitions"): a dataset may place its rows by
// the values of other columns than its key, so that a partitioned run
// sends every row with one value of those columns to one owner. The
// partition of a row is then xxhash64 of the encoding of its partition
// key values modulo the partitions; with the row key as partition key
// (the default) that encoding is the row key, and the partition the one
// partitionOf computes from it.
//
// A row whose partition key value changed between two versions lives in
// another partition at each: the run writes its row delete marker in the
// old partition (that partition's comparison does not see it) and its
// cells in the new one, both at the run's id. At any one version a row
// key is visible in one partition only; scans and diffs merge the
// partitions by row key (partition.go), and a point read looks in every
// partition unless the partition key is made of key columns only.

import (
	"errors"
	"fmt"
	"slices"
)

// ErrPartitionKey is returned by a run whose partition key is not the
// one the dataset stores its rows by, or names a column the run's schema
// does not have.
var ErrPartitionKey = errors.New("snapshot: the partition key differs from the dataset's")

// partitionNull is the encoding of a NULL partition key value: one byte
// below every tag of a key value (encoding.go), so every NULL value of a
// column encodes alike and no other value encodes as it does.
const partitionNull = 0x01

// appendPartitionValue appends v's partition key encoding: the key
// encoding (appendKeyValue), or partitionNull for NULL.
func appendPartitionValue(dst []byte, v Value) ([]byte, error) {
	if v.Kind == KindNull {
		return append(dst, partitionNull), nil
	}
	return appendKeyValue(dst, v)
}

// storedPartitionKey returns the partition key a dataset of key records
// for pk: nil when pk is empty or is the key (rows placed by row key).
func storedPartitionKey(pk, key []string) []string {
	if len(pk) == 0 || slices.Equal(pk, key) {
		return nil
	}
	return slices.Clone(pk)
}

// placer computes the partition of each row of one schema.
type placer struct {
	parts int
	// idx are the schema indexes of the partition key columns; nil when
	// rows are placed by row key.
	idx   []int
	names []string
	buf   []byte
	last  []byte // the last row key placed, when idx is set
}

// newPlacer returns the placer of rows of schema over parts partitions by
// the partition key pk (nil: the row key). ErrPartitionKey names a column
// of pk that schema lacks.
func newPlacer(schema Schema, pk []string, parts int) (placer, error) {
	pl := placer{parts: parts}
	for _, name := range pk {
		i := slices.IndexFunc(schema.Columns, func(c Column) bool { return c.Name == name })
		if i < 0 {
			return placer{}, fmt.Errorf("%w: partition key column %q is not a column of the source (columns %v)", ErrPartitionKey, name, columnNames(schema))
		}
		pl.idx, pl.names = append(pl.idx, i), append(pl.names, name)
	}
	return pl, nil
}

// partition returns the partition of the row of values vals and encoded
// row key rowKey. A row key equal to the one placed before is a
// duplicate (ErrBadKey) when rows are placed by other columns: its two
// occurrences could land in two partitions, whose comparisons would each
// take it for their own. Within a partition the run finds the others
// (D5).
func (pl *placer) partition(rowKey []byte, vals []Value) (int, error) {
	if pl.idx == nil {
		return partitionOf(rowKey, pl.parts), nil
	}
	if pl.last != nil && string(pl.last) == string(rowKey) {
		return 0, ErrDuplicateKey
	}
	pl.last = append(pl.last[:0], rowKey...)
	pl.buf = pl.buf[:0]
	var err error
	for j, i := range pl.idx {
		if pl.buf, err = appendPartitionValue(pl.buf, vals[i]); err != nil {
			return 0, fmt.Errorf("%w (partition key column %q)", err, pl.names[j])
		}
	}
	return partitionOf(pl.buf, pl.parts), nil
}

// keyPartition returns the partition of a row from its key values alone,
// when the partition key is made of key columns (schema.Key); ok is false
// when it is not and a read must look in every partition.
func keyPartition(schema Schema, pk []string, key []Value, parts int) (p int, ok bool, err error) {
	if pk == nil {
		return 0, false, nil
	}
	var buf []byte
	for _, name := range pk {
		i := slices.Index(schema.Key, name)
		if i < 0 || i >= len(key) {
			return 0, false, nil
		}
		if buf, err = appendPartitionValue(buf, key[i]); err != nil {
			return 0, false, err
		}
	}
	return partitionOf(buf, parts), true, nil
}

func columnNames(s Schema) []string {
	out := make([]string, len(s.Columns))
	for i, c := range s.Columns {
		out[i] = c.Name
	}
	return out
}

// setPartitionKey sets the partition key of a dataset's row that a run of
// schema begins: pk when not nil (storedPartitionKey) and the dataset has
// no committed version, else it must be the dataset's (ErrPartitionKey).
// Every column of the key the run uses must be in schema.
func setPartitionKey(st *rowState, name string, pk []string, schema Schema) error {
	if pk != nil {
		want := storedPartitionKey(pk, schema.Key)
		if st.Current > 0 && !slices.Equal(want, st.Config.PartitionKey) {
			return fmt.Errorf("%w: %s stores its rows by %s, the run places them by %s (keep the partition key, or drop the dataset, or name another)",
				ErrPartitionKey, name, partitionKeyText(st.Config.PartitionKey), partitionKeyText(want))
		}
		st.Config.PartitionKey = want
	}
	_, err := newPlacer(schema, st.Config.PartitionKey, 1)
	return err
}

// partitionKeyText names a stored partition key for an error.
func partitionKeyText(pk []string) string {
	if pk == nil {
		return "the row key"
	}
	return fmt.Sprintf("partition key %v", pk)
}
