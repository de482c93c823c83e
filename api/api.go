// Package api holds the wire schema of snapstore's definitions: an adapter
// and a data connection as the config file, the HTTP API (server/openapi.yaml),
// the CLI and the console write them, each field with its YAML and JSON
// name, and the duration type they share. It imports nothing of the project,
// as consul's and nomad's api packages serve their servers, CLIs and UIs.
package api
