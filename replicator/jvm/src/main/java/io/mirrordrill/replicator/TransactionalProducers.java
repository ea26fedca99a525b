package io.mirrordrill.replicator;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The transactional producers of one executor JVM, one per transactional id, shared by the
 * successive tasks that write its partition (a micro-batch query runs a task per batch; making
 * a producer and fencing on every batch would cost round trips each time).
 *
 * A producer belongs to one query start (its generation): a newer start's task closes the older
 * one's producer and makes its own, whose initTransactions aborts whatever the old one left open.
 * Any failure (fenced by a newer driver, a refused send, a commit that did not complete) closes
 * the producer and fails the task that meets it, and so the query: the replicator restarts it
 * after the newest record committed on the target, never by retrying records the query already
 * passed.
 */
final class TransactionalProducers {
    /** Longer than any lease a standby waits out, so only a fence, never a timeout, ends a live driver's transaction. */
    static final String TRANSACTION_TIMEOUT_MS = "60000";

    private static final Map<String, Handle> REGISTRY = new ConcurrentHashMap<>();
    // commits transactions that stopped receiving records: the last record of a burst shows
    // without waiting for the next one
    private static final ScheduledThreadPoolExecutor IDLE_COMMITS = idleCommits();

    private TransactionalProducers() {
    }

    private static ScheduledThreadPoolExecutor idleCommits() {
        ScheduledThreadPoolExecutor pool = new ScheduledThreadPoolExecutor(4, r -> {
            Thread t = new Thread(r, "mirrordrill-idle-commit");
            t.setDaemon(true);
            return t;
        });
        pool.setRemoveOnCancelPolicy(true);
        return pool;
    }

    /** The producer of {@code id} for this generation, made (and its transactions initialised) if needed. */
    static Handle acquire(String id, String generation, Map<String, String> config, long commitIntervalMs) {
        return REGISTRY.compute(id, (key, old) -> {
            if (old != null && old.generation.equals(generation) && old.failure == null) {
                return old;
            }
            if (old != null) {
                old.discard();
            }
            return new Handle(key, generation, config, commitIntervalMs);
        });
    }

    /** One transactional id's producer and its open transaction, used by one task at a time. */
    static final class Handle {
        final String id;
        final String generation;
        private final long commitIntervalNanos;
        private final long commitIntervalMs;
        private final KafkaProducer<byte[], byte[]> producer;
        private final ReentrantLock lock = new ReentrantLock();
        private boolean open;
        private long openedNanos;
        private long transactions;
        private volatile RuntimeException failure;

        Handle(String id, String generation, Map<String, String> config, long commitIntervalMs) {
            this.id = id;
            this.generation = generation;
            this.commitIntervalMs = commitIntervalMs;
            this.commitIntervalNanos = TimeUnit.MILLISECONDS.toNanos(commitIntervalMs);
            Map<String, Object> props = new HashMap<>(config);
            props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id);
            props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
            props.putIfAbsent(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, TRANSACTION_TIMEOUT_MS);
            props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
            props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
            producer = new KafkaProducer<>(props);
            try {
                producer.initTransactions();
            } catch (RuntimeException e) {
                producer.close(java.time.Duration.ZERO);
                throw e;
            }
        }

        /** Sends one record in the open transaction (opening one if none is), committing it once it is old enough. */
        void send(ProducerRecord<byte[], byte[]> record) {
            lock.lock();
            try {
                rethrowFailure();
                if (!open) {
                    begin();
                }
                producer.send(record);
                // the producer's first transaction holds its first record only: after a start or a
                // takeover the flow shows moving again at once, not a commit interval later
                if (transactions == 1 || System.nanoTime() - openedNanos >= commitIntervalNanos) {
                    commit();
                }
            } catch (KafkaException e) {
                throw fail(e);
            } finally {
                lock.unlock();
            }
        }

        /** The task's end: commit what it sent (or abort it, when the task failed). */
        void finish(boolean commit) {
            lock.lock();
            try {
                if (failure != null) {
                    if (commit) {
                        throw failure;
                    }
                    return;
                }
                if (open) {
                    if (commit) {
                        commit();
                    } else {
                        producer.abortTransaction();
                        open = false;
                    }
                }
            } catch (KafkaException e) {
                throw fail(e);
            } finally {
                lock.unlock();
            }
        }

        private void begin() {
            producer.beginTransaction();
            open = true;
            openedNanos = System.nanoTime();
            long number = ++transactions;
            IDLE_COMMITS.schedule(() -> commitIdle(number), commitIntervalMs, TimeUnit.MILLISECONDS);
        }

        private void commit() {
            producer.commitTransaction();
            open = false;
        }

        private void commitIdle(long number) {
            lock.lock();
            try {
                if (open && transactions == number && failure == null) {
                    commit();
                }
            } catch (KafkaException e) {
                fail(e); // the task's next send or its end rethrows it
            } finally {
                lock.unlock();
            }
        }

        private void rethrowFailure() {
            if (failure != null) {
                throw failure;
            }
        }

        private RuntimeException fail(KafkaException e) {
            if (failure == null) {
                failure = new KafkaException("transactional id " + id + ": " + e.getMessage(), e);
                REGISTRY.remove(id, this);
                producer.close(java.time.Duration.ZERO);
            }
            return failure;
        }

        /** Closed for a newer generation: an open transaction is left to that generation's initTransactions to abort. */
        void discard() {
            lock.lock();
            try {
                if (failure == null) {
                    failure = new KafkaException("transactional id " + id + ": replaced by a newer query start");
                    producer.close(java.time.Duration.ZERO);
                }
            } finally {
                lock.unlock();
            }
        }
    }
}
