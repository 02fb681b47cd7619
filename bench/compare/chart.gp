# Chart of bench/compare_modes: gnuplot -e "datafile='x.dat'; outfile='x.png'; plottitle='...'"
# Columns: mode p80 p90 p99 p999 cpu_us cpu_cores rss_mb max_qps (one row per mode, header row).
set terminal pngcairo size 1400,900 font ",10" noenhanced
set output outfile
set multiplot layout 2,2 title plottitle
set style data histograms
set key autotitle columnheader
set style fill solid 0.85 border -1
set boxwidth 0.85
set grid ytics
set key top left
set yrange [0:*]
set offsets 0, 0, graph 0.12, 0

set title "server latency percentiles (us, lower is better)"
set style histogram clustered gap 1
plot datafile using 2:xtic(1) title "p80" lc rgb "#9ecae1", \
     '' using 3 title "p90" lc rgb "#6baed6", \
     '' using 4 title "p99" lc rgb "#3182bd", \
     '' using 5 title "p99.9" lc rgb "#08519c"

set style histogram clustered gap 0.6
set title "server CPU per call (us, lower is better)"
plot datafile using 6:xtic(1) notitle lc rgb "#e6550d", \
     '' using 0:6:(sprintf("%.0f", $6)) with labels offset 0,0.7 notitle

set title "server RSS, peak over the window (MB)"
plot datafile using 8:xtic(1) notitle lc rgb "#31a354", \
     '' using 0:8:(sprintf("%.1f", $8)) with labels offset 0,0.7 notitle

set title "max throughput on one server core (QPS, closed loop, higher is better)"
plot datafile using 9:xtic(1) notitle lc rgb "#756bb1", \
     '' using 0:9:(sprintf("%.0f", $9)) with labels offset 0,0.7 notitle
unset multiplot
