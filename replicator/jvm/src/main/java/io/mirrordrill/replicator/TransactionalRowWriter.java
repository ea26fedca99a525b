package io.mirrordrill.replicator;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.spark.sql.ForeachWriter;
import org.apache.spark.sql.Row;

/**
 * The sink of a transactional flow: writes the flow's sink rows (topic, key, value, partition,
 * headers: the columns of Spark's Kafka sink) through one transactional producer per target
 * partition, so a driver that took over can fence everything an older driver still has buffered.
 *
 * Spark's own Kafka sink cannot be transactional (its producers are pooled across tasks and it
 * never calls initTransactions), and real-time mode accepts a ForeachWriter as its only other
 * production sink. One Spark task writes one source partition, which maps to one target
 * partition, so the producer of transactional id {@code <idPrefix><topic>.<partition>} has one
 * writer at a time. Records become visible at the commit: at least every
 * {@code commitIntervalMs} while records flow, on a timer when they stop (see
 * {@link TransactionalProducers}), and when the task ends; a producer's first record is
 * committed on its own, at once.
 */
public final class TransactionalRowWriter extends ForeachWriter<Row> {
    private static final long serialVersionUID = 1L;

    private final HashMap<String, String> producerConfig;
    private final String idPrefix;
    private final String generation;
    private final long commitIntervalMs;

    // the task's current target partition and its producer (one per task, in practice)
    private transient String topic;
    private transient int partition = -1;
    private transient TransactionalProducers.Handle handle;
    private transient Map<String, TransactionalProducers.Handle> handles;

    /**
     * @param producerConfig the producer's settings (bootstrap, security, tuning, interceptor)
     * @param idPrefix what every transactional id of the flow starts with
     * @param generation this query start's token: a producer made for an older start is closed, not reused
     * @param commitIntervalMs the longest a record waits in an open transaction
     */
    public TransactionalRowWriter(Map<String, String> producerConfig, String idPrefix, String generation,
                                  long commitIntervalMs) {
        this.producerConfig = new HashMap<>(producerConfig);
        this.idPrefix = idPrefix;
        this.generation = generation;
        this.commitIntervalMs = commitIntervalMs;
    }

    @Override
    public boolean open(long partitionId, long epochId) {
        handles = new HashMap<>();
        return true;
    }

    @Override
    public void process(Row row) {
        String rowTopic = row.getString(0);
        int rowPartition = row.getInt(3);
        if (rowPartition != partition || !rowTopic.equals(topic)) {
            handle = handleFor(rowTopic, rowPartition);
            topic = rowTopic;
            partition = rowPartition;
        }
        ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(
                rowTopic, rowPartition, null, (byte[]) row.get(1), (byte[]) row.get(2), headers(row.getList(4)));
        handle.send(record);
    }

    @Override
    public void close(Throwable errorOrNull) {
        if (handles == null) {
            return;
        }
        RuntimeException first = null;
        for (TransactionalProducers.Handle h : handles.values()) {
            try {
                h.finish(errorOrNull == null);
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                }
            }
        }
        handles = null;
        handle = null;
        topic = null;
        partition = -1;
        if (first != null && errorOrNull == null) {
            throw first;
        }
    }

    private TransactionalProducers.Handle handleFor(String rowTopic, int rowPartition) {
        String id = idPrefix + rowTopic + "." + rowPartition;
        TransactionalProducers.Handle h = handles.get(id);
        if (h == null) {
            h = TransactionalProducers.acquire(id, generation, producerConfig, commitIntervalMs);
            handles.put(id, h);
        }
        return h;
    }

    private static RecordHeaders headers(List<Row> rows) {
        if (rows == null) {
            return null;
        }
        Header[] out = new Header[rows.size()];
        for (int i = 0; i < out.length; i++) {
            Row h = rows.get(i);
            out[i] = new RecordHeader(h.getString(0), (byte[]) h.get(1));
        }
        return new RecordHeaders(out);
    }
}
