package io.mirrordrill.replicator;

import org.apache.spark.sql.api.java.UDF1;

/**
 * A BIGINT as its 8 big-endian bytes: the value of the sink rows' source-offset and timestamp
 * headers, registered in every session as {@code mirrordrill_long_bytes}.
 *
 * Spark's ANSI mode (Spark 4's default) refuses {@code CAST(bigint AS BINARY)}, and the SQL way
 * round it, {@code unhex(lpad(hex(v), 16, '0'))}, builds two strings per header per record: a
 * flight recording put 9-10% of a task thread's samples there. This allocates the 8 bytes only.
 */
public final class BigEndianLong implements UDF1<Long, byte[]> {
    private static final long serialVersionUID = 1L;

    @Override
    public byte[] call(Long value) {
        if (value == null) {
            return null;
        }
        long v = value;
        byte[] out = new byte[8];
        for (int i = 7; i >= 0; i--) {
            out[i] = (byte) v;
            v >>>= 8;
        }
        return out;
    }
}
