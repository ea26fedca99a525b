package io.mirrordrill.replicator;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One line per acknowledged record ({@code run --trace}): the target position it took, when the
 * producer was handed it and when the target acknowledged it. The harness joins the lines with the
 * load's send and acknowledgement and the observer's first sighting of the same position, and so
 * says which step of the path a record waited in (harness/drill/tail_trace.py).
 *
 * <p>Kafka's interceptor API does not link a send to its acknowledgement. Within one producer and
 * one target partition, though, the acknowledgements come in the order of the sends (the producer
 * calls a partition's callbacks in send order, and one task writes a partition), so each partition
 * keeps the times of its sends not yet acknowledged and an acknowledgement takes the oldest. A
 * record sent with no partition is not traced: its acknowledgement could not be matched.
 */
final class RecordTrace {
    /** Producer setting: the folder the trace file goes into; unset, nothing is traced. */
    static final String DIR_CONFIG = "mirrordrill.trace.dir";
    static final String HEADER = "topic,partition,offset,sent_ms,acked_ms\n";

    private final Map<String, Map<Integer, ArrayDeque<Long>>> unacknowledged = new ConcurrentHashMap<>();
    private final Path file;
    private StringBuilder pending = new StringBuilder(HEADER);

    RecordTrace(Path dir) throws IOException {
        Files.createDirectories(dir);
        file = dir.resolve("trace-" + UUID.randomUUID() + ".csv");
    }

    /** A record handed to the producer (the task thread), before the producer's own buffering. */
    void sent(String topic, Integer partition, long nowMs) {
        if (partition == null) {
            return;
        }
        ArrayDeque<Long> queue = unacknowledged.computeIfAbsent(topic, t -> new ConcurrentHashMap<>())
            .computeIfAbsent(partition, p -> new ArrayDeque<>());
        synchronized (queue) {
            queue.addLast(nowMs);
        }
    }

    /** The acknowledgement of the oldest record sent to this partition (the producer's network thread);
     * {@code offset} below 0: it failed, and only leaves the queue. */
    void acknowledged(String topic, int partition, long offset, long nowMs) {
        Map<Integer, ArrayDeque<Long>> ofTopic = unacknowledged.get(topic);
        ArrayDeque<Long> queue = ofTopic == null ? null : ofTopic.get(partition);
        if (queue == null) {
            return;
        }
        Long sentMs;
        synchronized (queue) {
            sentMs = queue.pollFirst();
        }
        if (sentMs == null || offset < 0) {
            return;
        }
        synchronized (this) {
            pending.append(topic).append(',').append(partition).append(',').append(offset).append(',')
                .append(sentMs).append(',').append(nowMs).append('\n');
        }
    }

    /** Append what was acknowledged since the last call to the file (the interceptor's flusher thread). */
    void flush() {
        StringBuilder lines;
        synchronized (this) {
            if (pending.length() == 0) {
                return;
            }
            lines = pending;
            pending = new StringBuilder(Math.max(256, lines.length()));
        }
        try {
            Files.write(file, lines.toString().getBytes(StandardCharsets.UTF_8),
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException ignored) {
            // A trace is a diagnosis: replication must never fail because a file could not be written.
        }
    }
}
