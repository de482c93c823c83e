package hbasetest

import (
	"testing"

	"github.com/snapstore/snapstore/internal/testenv"
	"github.com/snapstore/snapstore/store/hbase/internal/gateway"
)

// Gateway is a private Thrift2 gateway of the test HBase that an outage
// test stops and starts without disturbing the shared gateway other tests
// use.
type Gateway = gateway.Gateway

// StartGateway starts a private gateway of the test HBase on a port of its
// own and stops it when t ends (see gateway.Start). It skips t when there
// is no test HBase, or when the test HBase was not started by
// scripts/hbase-standalone.sh on this machine.
func StartGateway(t testing.TB) *Gateway {
	t.Helper()
	return gateway.Start(t, testenv.HBaseThrift(t))
}
