'use strict'
// Matrix driver for kafkajs: one consumer-group member.
//
// It joins the group, prints what it is assigned and every record it consumes to stdout as JSON
// lines, and leaves the group cleanly (consumer.disconnect() sends LeaveGroup) when a line "close"
// arrives on stdin or stdin ends. A crash is the test SIGKILLing this process.
//
//   node driver.js --bootstrap HOST:PORT --topic T --group G --member a \
//       --session-timeout-ms 6000 --heartbeat-ms 500 [--assignor roundrobin]

const readline = require('readline')
const { Kafka, logLevel, PartitionAssigners } = require('kafkajs')
const kafkajsVersion = require('kafkajs/package.json').version

function parseArgs (argv) {
  const opts = { assignor: 'roundrobin', 'session-timeout-ms': '6000', 'heartbeat-ms': '500' }
  for (let i = 0; i + 1 < argv.length; i += 2) {
    opts[argv[i].replace(/^--/, '')] = argv[i + 1]
  }
  return opts
}

function emit (obj) {
  process.stdout.write(JSON.stringify(obj) + '\n')
}

// kafkajs 2.2.4 ships only the round-robin assigner.
const ASSIGNERS = { roundrobin: PartitionAssigners.roundRobin }

async function main () {
  const opts = parseArgs(process.argv.slice(2))
  const assigner = ASSIGNERS[opts.assignor]
  if (!assigner) {
    throw new Error(`unknown assignor ${opts.assignor}`)
  }
  const sessionTimeout = Number(opts['session-timeout-ms'])
  const kafka = new Kafka({
    clientId: `matrix-kafkajs-${opts.member}`,
    brokers: opts.bootstrap.split(','),
    logLevel: logLevel.ERROR,
    retry: { retries: 10, initialRetryTime: 100 }
  })
  const consumer = kafka.consumer({
    groupId: opts.group,
    sessionTimeout,
    rebalanceTimeout: Math.max(sessionTimeout, 10000),
    heartbeatInterval: Number(opts['heartbeat-ms']),
    maxWaitTimeInMs: 500,
    partitionAssigners: [assigner]
  })
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    const partitions = (payload.memberAssignment[opts.topic] || []).slice().sort((a, b) => a - b)
    emit({ event: 'assignment', partitions }) // the whole assignment, every generation
  })
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    emit({ event: 'error', error: String(payload.error) })
  })

  let closing = null
  const close = () => {
    if (closing === null) {
      closing = consumer.disconnect().then(() => {
        emit({ event: 'closed' })
        process.exit(0)
      })
    }
    return closing
  }
  const input = readline.createInterface({ input: process.stdin })
  input.on('line', (line) => { if (line.trim() === 'close') close() })
  input.on('close', close)

  await consumer.connect()
  emit({ event: 'started', client: 'kafkajs', version: kafkajsVersion, assignor: opts.assignor })
  await consumer.subscribe({ topics: [opts.topic], fromBeginning: true })
  await consumer.run({
    eachBatch: async ({ batch }) => {
      if (batch.messages.length > 0) {
        emit({ event: 'records', records: batch.messages.map((m) => [batch.partition, Number(m.offset)]) })
      }
    }
  })
}

main().catch((error) => {
  process.stderr.write(`driver failed: ${error && error.stack ? error.stack : error}\n`)
  process.exit(1)
})
