package adapters

// Record kinds in the metadata table (snapshot.PutRecord); adapters keeps
// no storage keys of its own.
const (
	recordConnection = "adapters.connection"
	recordAdapter    = "adapters.adapter"
	recordRun        = "adapters.run"
)
