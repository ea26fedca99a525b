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
 * they were in (self) and the methods on their stacks (total, once a sample); where each kind
 * waited (parked or in Object.wait, milliseconds by the first method outside the JDK that asked
 * to wait) and sat in native code (samples by native method and its caller); and the JVM's mean
 * CPU load. Run as a source file ({@code java FlightRecordingSummary.java REC.jfr}), read by
 * {@code primitives/jvm_flight_recording.py}, which ranks and groups the counts.
 *
 * Why not {@code jfr print}: its text and JSON carry every sample's whole stack, hundreds of
 * megabytes for a minute at a 1 ms period; the JDK's own reader counts them in one pass here.
 *
 * Given FROM_EPOCH_MS, only the events from then on are counted.
 *
 * Output, one count a line, tab-separated: {@code kind  thread-kind  method  count} where kind is
 * {@code samples} (method empty), {@code self}, {@code total}, {@code waited_ms} or {@code native}; and {@code cpu  jvm  -  mean}
 * lines for the JVM's and the machine's CPU load (fractions of all cores).
 */
public final class FlightRecordingSummary {
    private static final Pattern UUIDS = Pattern.compile("[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}");
    private static final Pattern DIGITS = Pattern.compile("\\d+");
    /** The frames of a wait itself: the park, the lock or condition it waits in, Object.wait, sleep. */
    private static final Pattern PARKING = Pattern.compile(
        "jdk\\.internal\\.misc\\.|java\\.util\\.concurrent\\.locks\\.|java\\.lang\\.Object\\.wait|java\\.lang\\.Thread\\.sleep");

    private final long fromEpochMs;

    private final Map<String, Long> samples = new TreeMap<>();
    private final Map<String, Map<String, Long>> self = new HashMap<>();
    private final Map<String, Map<String, Long>> total = new HashMap<>();
    private final Map<String, Map<String, Long>> waitedMs = new HashMap<>();
    private final Map<String, Map<String, Long>> nativeSamples = new HashMap<>();
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
        } else if (type.equals("jdk.ThreadPark") || type.equals("jdk.JavaMonitorWait")) {
            String kind = threadKind(event.getThread("eventThread"));
            waitedMs.computeIfAbsent(kind, k -> new HashMap<>())
                .merge(waitSite(event), event.getDuration().toMillis(), Long::sum);
        } else if (type.equals("jdk.NativeMethodSample")) {
            String kind = threadKind(event.getThread("sampledThread"));
            List<RecordedFrame> frames = event.getStackTrace() == null ? List.of() : event.getStackTrace().getFrames();
            nativeSamples.computeIfAbsent(kind, k -> new HashMap<>())
                .merge(frames.isEmpty() ? "?" : methodName(frames.get(0)) + " <- " + waitSite(event), 1L, Long::sum);
        } else if (type.equals("jdk.CPULoad")) {
            jvmLoad += event.getFloat("jvmUser") + event.getFloat("jvmSystem");
            machineLoad += event.getFloat("machineTotal");
            loadEvents++;
        }
    }

    /**
     * Where a thread waited: the first method on its stack outside the JDK (the code that asked to
     * wait); for a thread of the JDK's own (an idle pool thread), the first method past the parking
     * itself (a queue's take, say).
     */
    static String waitSite(RecordedEvent event) {
        if (event.getStackTrace() == null) {
            return "?";
        }
        List<RecordedFrame> frames = event.getStackTrace().getFrames();
        String pastParking = null;
        for (RecordedFrame frame : frames) {
            String method = methodName(frame);
            if (!method.startsWith("java.") && !method.startsWith("jdk.") && !method.startsWith("sun.")) {
                return method;
            }
            if (pastParking == null && !PARKING.matcher(method).lookingAt()) {
                pastParking = method;
            }
        }
        return pastParking != null ? pastParking : frames.isEmpty() ? "?" : methodName(frames.get(0));
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
        waitedMs.forEach((kind, ms) -> ms.forEach((m, n) -> out.println("waited_ms\t" + kind + "\t" + m + "\t" + n)));
        nativeSamples.forEach((kind, counts) -> counts.forEach((m, n) -> out.println("native\t" + kind + "\t" + m + "\t" + n)));
        if (loadEvents > 0) {
            out.println("cpu\tjvm\t\t" + jvmLoad / loadEvents);
            out.println("cpu\tmachine\t\t" + machineLoad / loadEvents);
        }
    }
}
