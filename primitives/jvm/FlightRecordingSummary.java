import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;

import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;

/**
 * Counts a flight recording's execution samples per thread kind: each kind's samples, the methods
 * they were in (self) and the methods on their stacks (total, once a sample), and the JVM's mean
 * CPU load. Run as a source file ({@code java FlightRecordingSummary.java REC.jfr}), read by
 * {@code primitives/jvm_flight_recording.py}, which ranks and groups the counts.
 *
 * Why not {@code jfr print}: its text and JSON carry every sample's whole stack, hundreds of
 * megabytes for a minute at a 1 ms period; the JDK's own reader counts them in one pass here.
 *
 * Given FROM_EPOCH_MS, only the events from then on are counted.
 *
 * Output, one count a line, tab-separated: {@code kind  thread-kind  method  count} where kind is
 * {@code samples} (method empty), {@code self} or {@code total}; and {@code cpu  jvm  -  mean}
 * lines for the JVM's and the machine's CPU load (fractions of all cores).
 */
public final class FlightRecordingSummary {
    private static final Pattern UUIDS = Pattern.compile("[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}");
    private static final Pattern DIGITS = Pattern.compile("\\d+");

    private final long fromEpochMs;

    private final Map<String, Long> samples = new TreeMap<>();
    private final Map<String, Map<String, Long>> self = new HashMap<>();
    private final Map<String, Map<String, Long>> total = new HashMap<>();
    private double jvmLoad;
    private double machineLoad;
    private long loadEvents;

    public static void main(String[] args) throws IOException {
        if (args.length < 1 || args.length > 2) {
            System.err.println("usage: java FlightRecordingSummary.java RECORDING.jfr [FROM_EPOCH_MS]");
            System.exit(2);
        }
        FlightRecordingSummary summary = new FlightRecordingSummary(args.length == 2 ? Long.parseLong(args[1]) : 0L);
        try (RecordingFile file = new RecordingFile(Path.of(args[0]))) {
            while (file.hasMoreEvents()) {
                summary.add(file.readEvent());
            }
        }
        summary.print(System.out);
    }

    /** Counts only the events from {@code fromEpochMs} on (0: all): a profile of the copying, not the start. */
    FlightRecordingSummary(long fromEpochMs) {
        this.fromEpochMs = fromEpochMs;
    }

    /** A thread's kind: its name with every number replaced (task 12 and task 13 are one kind). */
    static String threadKind(RecordedThread thread) {
        if (thread == null) {
            return "?";
        }
        String name = thread.getJavaName() != null ? thread.getJavaName() : thread.getOSName();
        if (name == null) {
            return "?";
        }
        return DIGITS.matcher(UUIDS.matcher(name).replaceAll("#")).replaceAll("#").replace('\t', ' ');
    }

    static String methodName(RecordedFrame frame) {
        RecordedMethod method = frame.getMethod();
        if (method == null) {
            return "?";
        }
        return method.getType().getName() + "." + method.getName();
    }

    void add(RecordedEvent event) {
        if (event.getStartTime().toEpochMilli() < fromEpochMs) {
            return;
        }
        String type = event.getEventType().getName();
        if (type.equals("jdk.ExecutionSample")) {
            addSample(event);
        } else if (type.equals("jdk.CPULoad")) {
            jvmLoad += event.getFloat("jvmUser") + event.getFloat("jvmSystem");
            machineLoad += event.getFloat("machineTotal");
            loadEvents++;
        }
    }

    private void addSample(RecordedEvent event) {
        String kind = threadKind(event.getThread("sampledThread"));
        samples.merge(kind, 1L, Long::sum);
        if (event.getStackTrace() == null) {
            return;
        }
        List<RecordedFrame> frames = event.getStackTrace().getFrames();
        if (frames.isEmpty()) {
            return;
        }
        self.computeIfAbsent(kind, k -> new HashMap<>()).merge(methodName(frames.get(0)), 1L, Long::sum);
        Set<String> seen = new HashSet<>();  // a recursive method counts once a sample
        Map<String, Long> totals = total.computeIfAbsent(kind, k -> new HashMap<>());
        for (RecordedFrame frame : frames) {
            String method = methodName(frame);
            if (seen.add(method)) {
                totals.merge(method, 1L, Long::sum);
            }
        }
    }

    void print(PrintStream out) {
        samples.forEach((kind, n) -> out.println("samples\t" + kind + "\t\t" + n));
        self.forEach((kind, counts) -> counts.forEach((m, n) -> out.println("self\t" + kind + "\t" + m + "\t" + n)));
        total.forEach((kind, counts) -> counts.forEach((m, n) -> out.println("total\t" + kind + "\t" + m + "\t" + n)));
        if (loadEvents > 0) {
            out.println("cpu\tjvm\t\t" + jvmLoad / loadEvents);
            out.println("cpu\tmachine\t\t" + machineLoad / loadEvents);
        }
    }
}
