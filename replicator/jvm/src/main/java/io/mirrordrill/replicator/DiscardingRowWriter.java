package io.mirrordrill.replicator;

import org.apache.spark.sql.ForeachWriter;
import org.apache.spark.sql.Row;

/**
 * The sink of a standby's rehearsal query: every row still comes through the flow's transform
 * (Spark computes a row before its writer sees it), and none is written anywhere.
 *
 * A standby driver runs its flow's query once this way before it takes the lease, so what a
 * query pays the first time in a JVM (planning, the tasks' serialisation, the transform's
 * generated code, the Kafka consumer's classes) is paid before the takeover, not during it.
 * {@link #open} refuses every partition, so Spark hands no row to {@link #process}.
 */
public final class DiscardingRowWriter extends ForeachWriter<Row> {
    private static final long serialVersionUID = 1L;

    @Override
    public boolean open(long partitionId, long epochId) {
        return false;
    }

    @Override
    public void process(Row row) {
        // never called: open refused the partition
    }

    @Override
    public void close(Throwable errorOrNull) {
        // nothing was opened
    }
}
