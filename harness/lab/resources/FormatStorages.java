/*
 * Formats several KRaft brokers' storage in one JVM: Kafka's own StorageTool, run once per broker.
 *
 * A lab starts up to six brokers; one StorageTool JVM each loaded the same classes six times.
 * Arguments: pairs of (cluster id, broker properties file). Stops at the first broker whose
 * format fails, with that file's path on stderr, and exits 1.
 */
public final class FormatStorages {
    private FormatStorages() {
    }

    public static void main(String[] argv) {
        if (argv.length == 0 || argv.length % 2 != 0) {
            System.err.println("usage: FormatStorages CLUSTER_ID CONFIG [CLUSTER_ID CONFIG ...]");
            System.exit(2);
        }
        for (int i = 0; i < argv.length; i += 2) {
            String[] args = {"format", "-t", argv[i], "-c", argv[i + 1], "--ignore-formatted"};
            int code;
            try {
                code = kafka.tools.StorageTool.execute(args, System.out);
            } catch (Throwable e) {
                System.err.println("formatting " + argv[i + 1] + " failed: " + e);
                code = 1;
            }
            if (code != 0) {
                System.err.println("formatting " + argv[i + 1] + " failed (exit " + code + ")");
                System.exit(1);
            }
        }
        System.exit(0);
    }
}
