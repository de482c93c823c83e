// Package hbase is the Apache HBase backend of store.Store, spoken through
// HBase's Thrift2 gateway (THBaseService) with github.com/apache/thrift.
// The handful of Thrift structs and calls it needs are written by hand in
// wire.go from the field ids of HBase's IDL.
package hbase
