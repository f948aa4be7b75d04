// Matrix driver for franz-go (github.com/twmb/franz-go/pkg/kgo): one consumer-group member.
//
// It joins the group, prints what it is assigned and every record it consumes to stdout as
// JSON lines, and leaves the group cleanly (Client.Close sends LeaveGroup) when a line "close"
// arrives on stdin or stdin ends. A crash is the test SIGKILLing this process.
//
// With --group-protocol consumer it runs a KIP-848 group (kgo.ServerSideBalancer): the broker
// assigns with its "uniform" assignor (asked for by --assignor uniform, which franz-go derives
// from its sticky balancer) or "range", and owns the session timeout and heartbeat interval.
// franz-go falls back to the classic protocol by itself when the broker does not serve KIP-848,
// so the test checks on the wire that the members sent ConsumerGroupHeartbeat and no JoinGroup.
//
//	franz-go-driver --bootstrap HOST:PORT --topic T --group G --member a \
//	    --session-timeout-ms 6000 --heartbeat-ms 500 [--assignor cooperative-sticky] [--group-protocol classic]
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

var outMu sync.Mutex

func emit(v map[string]any) {
	line, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	outMu.Lock()
	defer outMu.Unlock()
	os.Stdout.Write(append(line, '\n'))
}

func franzVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, dep := range info.Deps {
		if dep.Path == "github.com/twmb/franz-go" {
			return strings.TrimPrefix(dep.Version, "v")
		}
	}
	return "unknown"
}

func balancer(name string) (kgo.GroupBalancer, error) {
	switch name {
	case "uniform": // KIP-848: franz-go asks the broker for "uniform" when its first balancer is sticky
		return kgo.CooperativeStickyBalancer(), nil
	case "cooperative-sticky":
		return kgo.CooperativeStickyBalancer(), nil
	case "sticky":
		return kgo.StickyBalancer(), nil
	case "range":
		return kgo.RangeBalancer(), nil
	case "roundrobin":
		return kgo.RoundRobinBalancer(), nil
	}
	return nil, fmt.Errorf("unknown assignor %q", name)
}

func partitionsOf(assigned map[string][]int32, topic string) []int32 {
	ps := append([]int32{}, assigned[topic]...)
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}

func main() {
	bootstrap := flag.String("bootstrap", "", "bootstrap servers, comma-separated")
	topic := flag.String("topic", "", "topic to consume")
	group := flag.String("group", "", "consumer group id")
	member := flag.String("member", "", "member name (part of the client id)")
	sessionMs := flag.Int("session-timeout-ms", 6000, "session timeout")
	heartbeatMs := flag.Int("heartbeat-ms", 500, "heartbeat interval")
	assignor := flag.String("assignor", "cooperative-sticky", "cooperative-sticky, sticky, range, roundrobin, uniform")
	protocol := flag.String("group-protocol", "classic", "classic, or consumer (KIP-848)")
	flag.Parse()

	bal, err := balancer(*assignor)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(strings.Split(*bootstrap, ",")...),
		kgo.ClientID("matrix-franz-go-" + *member),
		kgo.ConsumerGroup(*group),
		kgo.ConsumeTopics(*topic),
		kgo.Balancers(bal),
		kgo.SessionTimeout(time.Duration(*sessionMs) * time.Millisecond),
		kgo.HeartbeatInterval(time.Duration(*heartbeatMs) * time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			emit(map[string]any{"event": "assigned", "partitions": partitionsOf(m, *topic)})
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			emit(map[string]any{"event": "revoked", "partitions": partitionsOf(m, *topic)})
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			emit(map[string]any{"event": "lost", "partitions": partitionsOf(m, *topic)})
		}),
	}
	if *protocol == "consumer" {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	emit(map[string]any{"event": "started", "client": "franz-go", "version": franzVersion(), "assignor": *assignor,
		"group_protocol": *protocol})

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		scanner := bufio.NewScanner(os.Stdin)
		for scanner.Scan() {
			if strings.TrimSpace(scanner.Text()) == "close" {
				break
			}
		}
		cancel()
	}()

	for ctx.Err() == nil {
		fetches := cl.PollFetches(ctx)
		fetches.EachError(func(t string, p int32, err error) {
			if ctx.Err() == nil {
				emit(map[string]any{"event": "error", "error": fmt.Sprintf("%s[%d]: %v", t, p, err)})
			}
		})
		var records [][2]int64
		fetches.EachRecord(func(r *kgo.Record) {
			records = append(records, [2]int64{int64(r.Partition), r.Offset})
		})
		if len(records) > 0 {
			emit(map[string]any{"event": "records", "records": records})
		}
	}
	cl.Close() // commits (autocommit) and sends LeaveGroup
	emit(map[string]any{"event": "closed"})
}
