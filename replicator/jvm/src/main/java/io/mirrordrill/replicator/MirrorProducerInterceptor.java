package io.mirrordrill.replicator;

import java.io.IOException;
import java.io.Writer;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;

import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * Runs inside the producer of Spark's Kafka sink, for the jobs Spark's sink cannot do.
 *
 * 1. Keep the source record's timestamp: Spark's sink has no timestamp column, so the job
 *    carries it in the header {@code __mirrordrill.ts} (8 bytes, big-endian epoch ms); here it
 *    becomes the record's timestamp and the header is removed.
 * 2. Measure replication per target partition at acknowledgement: records, bytes, and the
 *    latency (ack time minus source timestamp, MirrorMaker 2's replication-latency-ms) as a
 *    log-scale histogram. Cumulative figures go to a JSON file every second (config
 *    {@code mirrordrill.metrics.dir}), which the replicator's Python side aggregates, and at
 *    once when a partition is acknowledged for the first time: the replicator dates its first
 *    record moved by the file, and a second's wait made that up to a second late.
 * 3. With {@code mirrordrill.trace.dir} set ({@code run --trace}), trace each record's send and
 *    acknowledgement ({@link RecordTrace}).
 */
public class MirrorProducerInterceptor implements ProducerInterceptor<byte[], byte[]> {
    public static final String TIMESTAMP_HEADER = "__mirrordrill.ts";
    public static final String METRICS_DIR_CONFIG = "mirrordrill.metrics.dir";
    /** Bucket i counts latencies in [2^(i-1), 2^i) ms; bucket 0 counts latencies below 1 ms. */
    static final int BUCKETS = 32;

    // topic -> partition -> figures. Two levels, not one "topic\0partition" key: an acknowledgement
    // then builds no string (the network thread did, per record: a flight recording of a backlog
    // drain put 18% of that thread's samples in this method, most of it that key's hashing and equals).
    private final Map<String, Map<Integer, PartitionStats>> stats = new ConcurrentHashMap<>();
    private ScheduledExecutorService flusher;
    private Path metricsFile;
    private RecordTrace trace;  // run --trace: each record's send and acknowledgement times

    static final class PartitionStats {
        final AtomicLongArray histogram = new AtomicLongArray(BUCKETS);
        final AtomicLongArray totals = new AtomicLongArray(5); // records, bytes, errors, latencySum, latencyMax
    }

    @Override
    public void configure(Map<String, ?> configs) {
        Object dir = configs.get(METRICS_DIR_CONFIG);
        Object traceDir = configs.get(RecordTrace.DIR_CONFIG);
        try {
            if (dir != null && !dir.toString().isEmpty()) {
                Files.createDirectories(Paths.get(dir.toString()));
                metricsFile = Paths.get(dir.toString(), "producer-" + UUID.randomUUID() + ".json");
            }
            if (traceDir != null && !traceDir.toString().isEmpty()) {
                trace = new RecordTrace(Paths.get(traceDir.toString()));
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot create the folder " + dir + " or " + traceDir, e);
        }
        if (metricsFile == null && trace == null) {
            return;
        }
        flusher = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "mirrordrill-metrics");
            t.setDaemon(true);
            return t;
        });
        flusher.scheduleAtFixedRate(this::writeFiles, 1, 1, TimeUnit.SECONDS);
    }

    @Override
    public ProducerRecord<byte[], byte[]> onSend(ProducerRecord<byte[], byte[]> record) {
        if (trace != null) {
            trace.sent(record.topic(), record.partition(), System.currentTimeMillis());
        }
        Header ts = record.headers().lastHeader(TIMESTAMP_HEADER);
        if (ts == null || ts.value() == null || ts.value().length != 8) {
            return record;
        }
        RecordHeaders kept = new RecordHeaders();
        for (Header h : record.headers()) {
            if (!TIMESTAMP_HEADER.equals(h.key())) {
                kept.add(h);
            }
        }
        long timestamp = ByteBuffer.wrap(ts.value()).getLong();
        return new ProducerRecord<>(record.topic(), record.partition(), timestamp, record.key(), record.value(), kept);
    }

    @Override
    public void onAcknowledgement(RecordMetadata metadata, Exception exception) {
        if (metadata == null || metadata.partition() < 0) {
            return;
        }
        if (trace != null) {
            trace.acknowledged(metadata.topic(), metadata.partition(), exception == null ? metadata.offset() : -1,
                System.currentTimeMillis());
        }
        Map<Integer, PartitionStats> ofTopic = stats.get(metadata.topic());
        if (ofTopic == null) {
            ofTopic = stats.computeIfAbsent(metadata.topic(), t -> new ConcurrentHashMap<>());
        }
        PartitionStats s = ofTopic.get(metadata.partition());
        boolean firstOfPartition = false;
        if (s == null) {
            PartitionStats fresh = new PartitionStats();
            s = ofTopic.putIfAbsent(metadata.partition(), fresh);
            firstOfPartition = s == null;
            s = firstOfPartition ? fresh : s;
        }
        if (exception != null) {
            s.totals.incrementAndGet(2);
            return;
        }
        long latency = Math.max(0, System.currentTimeMillis() - metadata.timestamp());
        s.totals.incrementAndGet(0);
        s.totals.addAndGet(1, Math.max(0, metadata.serializedKeySize()) + Math.max(0, metadata.serializedValueSize()));
        s.totals.addAndGet(3, latency);
        s.totals.accumulateAndGet(4, latency, Math::max);
        int bucket = latency == 0 ? 0 : Math.min(BUCKETS - 1, 64 - Long.numberOfLeadingZeros(latency));
        s.histogram.incrementAndGet(bucket);
        if (firstOfPartition && flusher != null) {
            try {
                flusher.execute(this::writeFiles);  // same thread as the timed writes: never two at once
            } catch (RejectedExecutionException closing) {
                // closed meanwhile: close() writes the figures itself
            }
        }
    }

    private void writeFiles() {
        if (metricsFile != null) {
            writeMetrics();
        }
        if (trace != null) {
            trace.flush();
        }
    }

    private void writeMetrics() {
        StringBuilder json = new StringBuilder(256 + stats.size() * 1024);
        json.append("{\"written_ms\":").append(System.currentTimeMillis()).append(",\"partitions\":[");
        boolean first = true;
        for (Map.Entry<String, Map<Integer, PartitionStats>> topic : stats.entrySet()) {
            for (Map.Entry<Integer, PartitionStats> partition : topic.getValue().entrySet()) {
                if (!first) {
                    json.append(',');
                }
                first = false;
                appendPartition(json, topic.getKey(), partition.getKey(), partition.getValue());
            }
        }
        json.append("]}\n");
        try {
            Path tmp = metricsFile.resolveSibling(metricsFile.getFileName() + ".tmp");
            try (Writer w = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
                w.write(json.toString());
            }
            Files.move(tmp, metricsFile, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException ignored) {
            // Metrics are best effort; replication must never fail because a file could not be written.
        }
    }

    private static void appendPartition(StringBuilder json, String topic, int partition, PartitionStats s) {
        json.append("{\"topic\":\"").append(escape(topic)).append("\",\"partition\":").append(partition)
            .append(",\"records\":").append(s.totals.get(0))
            .append(",\"bytes\":").append(s.totals.get(1))
            .append(",\"errors\":").append(s.totals.get(2))
            .append(",\"latency_sum_ms\":").append(s.totals.get(3))
            .append(",\"latency_max_ms\":").append(s.totals.get(4))
            .append(",\"latency_histogram\":[");
        for (int i = 0; i < BUCKETS; i++) {
            json.append(i == 0 ? "" : ",").append(s.histogram.get(i));
        }
        json.append("]}");
    }

    private static String escape(String s) {
        return s.replace("\\", "\\\\").replace("\"", "\\\"");
    }

    @Override
    public void close() {
        if (flusher != null) {
            flusher.shutdown();
            writeFiles();
        }
    }
}
