package adapters

import "time"

// What adapters keeps in the metadata table, through snapshot's record
// methods (snapshot.DB.PutRecord); adapters builds no storage key of its
// own.

// Record kinds, each a namespace of names.
const (
	recordConnection = "adapters.connection" // defRecord[api.Connection] by connection name
	recordAdapter    = "adapters.adapter"    // defRecord[adapterRecord] by adapter name
	recordRun        = "adapters.run"        // RunRecord by run id
	recordFire       = "adapters.fire"       // fireRecord by adapter name: the last tick fired (L1)
	recordRotation   = "adapters.rotation"   // the rotation counter of a round-robin adapter, by name (L2)
)

// defRecord is the stored form of an API definition with spec S (a
// api.Connection or an adapterRecord; a connection's literal secrets
// sealed, secretbox.go E1, its references as given).
type defRecord[S any] struct {
	Spec      S         `json:"spec"`
	Revision  int64     `json:"revision"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}
