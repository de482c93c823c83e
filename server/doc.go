// Package server is snapstore's HTTP API v1 on echo/v4: dataset reads pinned
// to one version (rows, scans, versions, diffs), the admin endpoints of data
// connections, adapters, runs, GC, tags and rollback, health and metrics.
//
// The contract is the OpenAPI 3 document embedded from openapi.yaml and
// served at /openapi.json; tests check that every registered route is
// documented and every documented route registered, and requests are
// validated against it before a handler runs: first the query string as a
// whole (one that url.ParseQuery does not parse, or a parameter the
// operation does not document, is a 400: nothing is dropped silently), then
// by a check compiled from the document for plain path and query
// parameters, and by kin-openapi for everything else and for every refusal
// (validate.go, R1 and R2). Each
// operation's x-snapstore-role extension is the least bearer-token role that
// may call it, so the document is also the authorisation table.
//
// Errors leave through one function, ProblemFor, which maps the sentinel
// errors of snapshot, adapters and store to RFC 9457 problem details with a
// stable code (etcd's toGRPCErrorMap, Prometheus's returnAPIError) and
// names the input to blame: the field a handler attached with WithField,
// else the sentinel's usual one (problem.go). A panic
// in a handler is recovered, logged and answered as a problem. A request
// whose client went away is not a server error: nothing is answered, it is
// logged at debug and counted with status 499 (nginx's).
//
// Concurrency: a Server is safe for concurrent use; it holds no state of its
// own beyond the shutting-down flag and metrics.
package server
