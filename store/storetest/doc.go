// Package storetest holds the conformance suite and the shared benchmarks of
// the store.Store contract, run by every backend's tests (store/pebble,
// store/hbase), after Thanos's testStoreAPIsAcceptance
// (pkg/store/acceptance_test.go) and raft's bench package.
//
// A backend test calls
//
//	func TestConformance(t *testing.T) {
//		storetest.RunSuite(t, openTestStore, storetest.WithReopen(reopenTestStore))
//	}
//
//	func BenchmarkStore(b *testing.B) { storetest.RunBenchmarks(b, openBenchStore) }
//
// The suite is a closed box: it uses only the store.Store interface, so a
// failure names a behaviour of the contract (an invariant store.S1..store.S9 of package
// store, or a documented error), never a backend detail. Each subtest
// writes at most a few hundred cells so that a remote backend with a
// millisecond round trip runs the suite in seconds. The randomized subtest
// compares the backend with an in-memory model and prints its seed.
package storetest
