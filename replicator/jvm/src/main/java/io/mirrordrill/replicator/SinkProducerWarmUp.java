package io.mirrordrill.replicator;

import java.util.List;
import java.util.Map;

import org.apache.spark.sql.catalyst.util.CaseInsensitiveMap$;
import org.apache.spark.sql.kafka010.KafkaSourceProvider$;
import org.apache.spark.sql.kafka010.producer.CachedKafkaProducer;
import org.apache.spark.sql.kafka010.producer.InternalKafkaProducerPool$;

import scala.jdk.javaapi.CollectionConverters;

/**
 * Opens a flow's sink producer in Spark's producer pool and fetches its target topics' metadata
 * before the flow's first record.
 *
 * Spark's Kafka sink takes its producer from the JVM's pool (keyed by the producer's settings)
 * and learns a topic's partitions at its first send: the first record of every target topic
 * waited for a metadata round trip to the target on top of its own send. This takes the
 * producer the sink will take, with the settings Spark derives from the same options, so the
 * pool keeps it, ready, for the query's tasks in this JVM (the driver's, with a local master).
 */
public final class SinkProducerWarmUp {
    private SinkProducerWarmUp() {
    }

    /**
     * The sink's producer for {@code sinkOptions} (the Kafka sink's options, {@code kafka.}
     * prefixed), with the metadata of {@code topics} fetched; returns how many partitions they have.
     * Only topics that exist on the target belong here: a producer's metadata request may create
     * a missing one where the broker auto-creates topics.
     */
    public static int warm(Map<String, String> sinkOptions, List<String> topics) {
        scala.collection.immutable.Map<String, String> options =
            scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(sinkOptions));
        Map<String, Object> params =
            KafkaSourceProvider$.MODULE$.kafkaParamsForProducer(CaseInsensitiveMap$.MODULE$.apply(options));
        CachedKafkaProducer cached = InternalKafkaProducerPool$.MODULE$.acquire(params);
        try {
            int partitions = 0;
            for (String topic : topics) {
                partitions += cached.producer().partitionsFor(topic).size();
            }
            return partitions;
        } finally {
            InternalKafkaProducerPool$.MODULE$.release(cached);
        }
    }
}
