// Package install registers every source connector, after Prometheus'
// discovery/install: package config imports it for its side effect (and
// so does every binary that reads a configuration), and a new connection
// type is one folder under adapters/ and one line here.
package install

import (
	_ "github.com/snapstore/snapstore/adapters/mysql"     // register the "mysql" connection type
	_ "github.com/snapstore/snapstore/adapters/postgres"  // register the "postgres" connection type
	_ "github.com/snapstore/snapstore/adapters/snapstore" // register the "snapstore" connection type
	_ "github.com/snapstore/snapstore/adapters/sqlite"    // register the "sqlite" connection type
)
