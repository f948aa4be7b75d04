// Consume-transform-produce with exactly-once, franz-go's GroupTransactSession, run by
// tests/transactions/test_eos_clients.py:  eos BOOTSTRAP SOURCE SINK GROUP TXN_ID RECORDS
// One transaction of 5 "aborted-N" records is aborted first; then each polled batch is transformed
// ("in-" -> "out-") and committed with the group's offsets in the same transaction.
package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func abortOne(ctx context.Context, bootstrap, sink, txnID string) {
	client, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.TransactionalID(txnID+"-abort"))
	if err != nil {
		fail("client: %v", err)
	}
	defer client.Close()
	if err := client.BeginTransaction(); err != nil {
		fail("begin: %v", err)
	}
	for i := 0; i < 5; i++ {
		record := &kgo.Record{Topic: sink, Key: []byte("x"), Value: []byte(fmt.Sprintf("aborted-%d", i))}
		if err := client.ProduceSync(ctx, record).FirstErr(); err != nil {
			fail("produce: %v", err)
		}
	}
	if err := client.EndTransaction(ctx, kgo.TryAbort); err != nil {
		fail("abort: %v", err)
	}
}

func main() {
	bootstrap, source, sink, group, txnID := os.Args[1], os.Args[2], os.Args[3], os.Args[4], os.Args[5]
	records, _ := strconv.Atoi(os.Args[6])
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	abortOne(ctx, bootstrap, sink, txnID)
	session, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(bootstrap), kgo.TransactionalID(txnID), kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(source), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		fail("session: %v", err)
	}
	defer session.Close()
	done := 0
	for done < records {
		fetches := session.PollFetches(ctx)
		if ctx.Err() != nil {
			fail("timed out after %d records", done)
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			fail("fetch: %v", errs)
		}
		if fetches.NumRecords() == 0 {
			continue
		}
		if err := session.Begin(); err != nil {
			fail("begin: %v", err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			out := &kgo.Record{Topic: sink, Key: r.Key, Value: bytes.Replace(r.Value, []byte("in-"), []byte("out-"), 1)}
			session.Produce(ctx, out, nil)
			done++
		})
		committed, err := session.End(ctx, kgo.TryCommit)
		if err != nil || !committed {
			fail("commit: committed=%v err=%v", committed, err)
		}
	}
	fmt.Printf("transformed %d\n", done)
}
