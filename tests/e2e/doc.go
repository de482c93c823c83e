// Package e2e holds end-to-end tests that run the built snapstore binary
// against a real MariaDB loaded with Sakila, through the HTTP API only
// (issue 5). Source rows are read and canonicalised here with the MySQL
// driver directly, independently of package adapters, so that a mapping bug
// there cannot hide itself.
package e2e
