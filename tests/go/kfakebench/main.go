// Command kfakebench times one franz-go workload: produce N records into a new topic, then consume them all in
// a consumer group (join included). It targets -seeds, or an in-process kfake cluster (franz-go's fake Kafka,
// the peer baseline) when -seeds is empty. benchmarks/peer_kfake.py runs it against both, side by side.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	seeds := flag.String("seeds", "", "bootstrap servers; empty: start an in-process kfake cluster")
	records := flag.Int("records", 10000, "records to produce and consume")
	partitions := flag.Int("partitions", 6, "partitions of the topic")
	serve := flag.Bool("serve", false, "only start an in-process kfake cluster, print its address, and serve "+
		"until standard input closes (benchmarks/coordinator_scale.py drives it like any broker)")
	flag.Parse()
	if *serve {
		cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
		must(err)
		fmt.Println(cluster.ListenAddrs()[0])
		_, _ = io.Copy(io.Discard, os.Stdin)
		cluster.Close()
		return
	}
	name := fmt.Sprintf("kfakebench-%d", time.Now().UnixNano())
	addrs := strings.Split(*seeds, ",")
	if *seeds == "" {
		cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
		must(err)
		defer cluster.Close()
		addrs = cluster.ListenAddrs()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	must(createTopic(ctx, addrs, name, *partitions))
	produced := timed(func() error { return produce(ctx, addrs, name, *records) })
	consumed := timed(func() error { return consume(ctx, addrs, name, *records) })
	fmt.Printf("produce_ms %.1f\nconsume_ms %.1f\n", produced, consumed)
}

func timed(step func() error) float64 {
	start := time.Now()
	must(step())
	return float64(time.Since(start).Microseconds()) / 1000
}

func createTopic(ctx context.Context, addrs []string, name string, partitions int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	topic := kmsg.NewCreateTopicsRequestTopic()
	topic.Topic, topic.NumPartitions, topic.ReplicationFactor = name, int32(partitions), 1
	req.Topics = append(req.Topics, topic)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if code := resp.Topics[0].ErrorCode; code != 0 {
		return fmt.Errorf("CreateTopics error code %d", code)
	}
	return nil
}

func produce(ctx context.Context, addrs []string, name string, n int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(name))
	if err != nil {
		return err
	}
	defer cl.Close()
	errs := make(chan error, 1)
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Key: fmt.Appendf(nil, "%d", i), Value: []byte("value")}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

func consume(ctx context.Context, addrs []string, name string, n int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumerGroup(name+"-group"), kgo.ConsumeTopics(name),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cl.Close()
	for seen := 0; seen < n; {
		fetches := cl.PollFetches(ctx)
		if err := fetches.Err0(); err != nil {
			return err
		}
		seen += fetches.NumRecords()
	}
	return nil
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
