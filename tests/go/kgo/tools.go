// Package kgosuite pins franz-go so that `go test github.com/twmb/franz-go/pkg/kgo` runs the kgo
// integration tests of exactly this version against the emulator (see tests/peers/test_franz_go_kgo.py).
package kgosuite

import _ "github.com/twmb/franz-go/pkg/kgo"
