// Package notify tells people about runs, as Airflow's callbacks and
// Grafana's contact points do: webhooks, configured per adapter and by
// default, receive a signed JSON event when a run fails, when a guard
// refuses a run, when a dataset goes stale past its schedule, and when it
// recovers. docs/notifications.md is the user's guide.
//
// It sits between adapters and server: adapters tells a Notifier of every
// run that ends on this node (adapters.RunObserver), and the server lists
// the delivery log and sends test events.
//
// The invariants:
//
//	N1 A run never waits on a receiver: RunEnded only queues; a full queue
//	   drops the event with an error logged and
//	   snapstore_notify_dropped_total counted.
//	N2 An event of a run is sent by the node that ran it (RunEnded is
//	   called there); the stale loop checks only the adapters whose
//	   scheduled ticks this node owns (adapters.Cluster.Owner), so each
//	   event is sent once in a cluster.
//	N3 Each attempt of each delivery is one entry of the journal
//	   "notify.delivery" in the store (snapshot/journal.go), so the log
//	   survives a restart and is shared by the nodes of a cluster on
//	   HBase; entries older than Options.Retention are trimmed.
//	N4 A delivery is tried at most its webhook's MaxAttempts times, the
//	   delays between attempts growing exponentially with full jitter
//	   (send.go); every attempt of one event carries the same
//	   X-Snapstore-Delivery id, so a receiver can drop repeats.
//	N5 No secret leaves the process: bodies carry none, the signature is
//	   an HMAC, and errors, logs and the delivery log never name the
//	   webhook's URL (it may hold a token) nor its secret.
//
// Goroutines: one event loop (RunEnded's queue: decides the events and
// their webhooks), Options.Workers senders (the delivery queue), the
// stale loop, and the delivery log's retention loop. Retries wait on
// timers, never in a sender.
package notify
