#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-only
# make bench-scale's report: the runs bench_scale.sh kept (one JSON object per line) as a
# markdown table with ratios on stdout, and a plot of committed/s against Q as an SVG.
# Core Perl only: the machine that runs the bench may have nothing else.
use strict;
use warnings;
use JSON::PP;

my ($runs, $svg, $busy, $date, $ncpu, $dur, $tatp_p, $sb_accounts, $inflight) = @ARGV;
die "usage: scale_report.pl RUNS SVG BUSY DATE NCPU DURATION TATP_P SB_ACCOUNTS INFLIGHT\n"
	unless defined $inflight;

my (%run, %qs, %wls);
open(my $in, '<', $runs) or die "Error: $runs: $!\n";
while (my $l = <$in>) {
	my $r = decode_json($l);
	$run{ $r->{q} }{ $r->{kind} }{ $r->{workload} } = $r;
	$qs{ $r->{q} } = 1;
	$wls{ $r->{workload} } = 1;
}
close($in);
my @qs = sort { $a <=> $b } keys %qs;
my @wls = grep { $wls{$_} } qw(tatp smallbank);
my @kinds = qw(echo xtx udpd);

sub get { my ($q, $k, $w) = @_; return $run{$q}{$k}{$w}; }
sub ok { my $r = shift; return $r && !$r->{failed} && $r->{duration_s}; }
# server CPU (NAPI threads and the server process) per committed transaction, in µs
sub cpu_per {
	my $r = shift;
	return undef unless ok($r) && $r->{committed_per_s} > 0;
	my $ns = ($r->{cpu_of}{napi} // 0) + ($r->{cpu_of}{daemon} // 0);
	return $ns / 1000 / ($r->{committed_per_s} * $r->{duration_s});
}
sub limit {
	my $r = shift;
	return 'server' if $r->{server_util} >= $busy;
	return '**client**' if $r->{client_util} >= $busy;
	return 'neither';
}
sub ratio { my ($a, $b) = @_; return (defined $a && defined $b && $b > 0) ? sprintf('%.2f', $a / $b) : '-'; }

print "## One server's scaling with its cores (make bench-scale)\n\n";
print "$date, $ncpu CPUs. One server (R = 1) on a veth with Q queues: its NAPI threads and its\n";
print "process (xtxd, or xtx-udpd with Q threads) on CPUs 1..Q, one per queue; an AF_XDP client on\n";
print "CPU 0 and the CPUs above Q, one thread per core, $inflight transactions in flight each.\n";
print "TATP $tatp_p subscribers (OCC), SmallBank $sb_accounts accounts (2PL), ${dur}s runs.\n";
print "committed/s: TATP's successful transactions (FaSST/DINT), SmallBank's commits; the echo\n";
print "answers every op without state, so its column is attempts/s (the packet ceiling). A side\n";
print "$busy % busy or more was the limit; **client** marks rows the client held back.\n\n";
print "| Q | workload | server | committed/s | attempts/s | server CPU µs/committed |"
	. " server busy | client busy (threads) | limit |\n";
print "|---|---|---|---|---|---|---|---|---|\n";
for my $q (@qs) {
	for my $w (@wls) {
		for my $k (@kinds) {
			my $r = get($q, $k, $w) or next;
			if (!ok($r)) {
				print "| $q | $w | $k | (run failed) | | | | | |\n";
				next;
			}
			my $c = cpu_per($r);
			printf "| %d | %s | %s | %s | %.0f | %s | %d%% | %d%% (%d) | %s |\n", $q, $w,
				$k eq 'udpd' ? 'xtx-udpd' : $k,
				$k eq 'echo' ? '-' : sprintf('%.0f', $r->{committed_per_s}),
				$r->{attempts_per_s}, ($k ne 'echo' && defined $c) ? sprintf('%.2f', $c) : '-',
				$r->{server_util}, $r->{client_util}, $r->{client_threads}, limit($r);
		}
	}
}

print "\nxtx against xtx-udpd in the same run (committed/s ratio; server CPU per committed ratio):\n\n";
print "| Q | workload | committed/s xtx / xtx-udpd | server CPU xtx / xtx-udpd | xtx attempts / echo attempts |\n";
print "|---|---|---|---|---|\n";
for my $q (@qs) {
	for my $w (@wls) {
		my ($x, $u, $e) = map { get($q, $_, $w) } qw(xtx udpd echo);
		next unless ok($x);
		printf "| %d | %s | %s | %s | %s |\n", $q, $w,
			ratio($x->{committed_per_s}, ok($u) ? $u->{committed_per_s} : undef),
			ratio(cpu_per($x), cpu_per($u)),
			ratio($x->{attempts_per_s}, ok($e) ? $e->{attempts_per_s} : undef);
	}
}
if (@qs > 1) {
	print "\nScaling, committed/s at Q over Q = $qs[0] (a client-held row understates it):\n\n";
	print "| workload | server | " . join(' | ', map { "Q = $_" } @qs) . " |\n";
	print "|---|---|" . join('', map { '---|' } @qs) . "\n";
	for my $w (@wls) {
		for my $k (qw(xtx udpd)) {
			my $base = get($qs[0], $k, $w);
			next unless ok($base);
			print "| $w | " . ($k eq 'udpd' ? 'xtx-udpd' : $k) . " | "
				. join(' | ', map { my $r = get($_, $k, $w);
					ok($r) ? ratio($r->{committed_per_s}, $base->{committed_per_s}) : '-' } @qs)
				. " |\n";
		}
	}
}

# ---- the plot: committed/s (echo: attempts/s) against Q, one line per server and workload ----
my ($W, $H, $L, $B, $T, $R) = (720, 420, 80, 50, 30, 190);
my @series;
my $ymax = 1;
for my $w (@wls) {
	for my $k (@kinds) {
		my @pts = map { my $r = get($_, $k, $w);
			ok($r) ? [$_, $k eq 'echo' ? $r->{attempts_per_s} : $r->{committed_per_s}] : () } @qs;
		next unless @pts;
		$ymax = $_->[1] > $ymax ? $_->[1] : $ymax for @pts;
		push @series, { name => ($k eq 'udpd' ? 'xtx-udpd' : $k eq 'echo' ? 'echo (attempts)' : $k)
			. " $w", pts => \@pts, dash => $w eq 'smallbank' ? '6,4' : '',
			colour => { echo => '#888888', xtx => '#1f77b4', udpd => '#d62728' }->{$k} };
	}
}
my $n = @qs;
my $xpos = sub { my $i = shift; return $L + ($n > 1 ? $i * ($W - $L - $R) / ($n - 1) : ($W - $L - $R) / 2); };
my %xi = map { ($qs[$_] => $_) } 0 .. $#qs;
my $ypos = sub { return $H - $B - $_[0] / $ymax * ($H - $B - $T); };
open(my $o, '>', $svg) or die "Error: $svg: $!\n";
print $o qq{<svg xmlns="http://www.w3.org/2000/svg" width="$W" height="$H" font-family="sans-serif" font-size="12">\n};
print $o qq{<rect width="$W" height="$H" fill="white"/>\n};
printf $o qq{<text x="%d" y="18" text-anchor="middle">one server: committed/s against server cores Q ($date)</text>\n}, $W / 2;
printf $o qq{<line x1="$L" y1="%d" x2="%d" y2="%d" stroke="black"/>\n}, $H - $B, $W - $R, $H - $B;
printf $o qq{<line x1="$L" y1="$T" x2="$L" y2="%d" stroke="black"/>\n}, $H - $B;
for my $i (0 .. $#qs) {
	printf $o qq{<text x="%.1f" y="%d" text-anchor="middle">%d</text>\n}, $xpos->($i), $H - $B + 16, $qs[$i];
}
printf $o qq{<text x="%d" y="%d" text-anchor="middle">Q (server cores, veth queues)</text>\n}, ($L + $W - $R) / 2, $H - 10;
for my $t (0 .. 4) {
	my $v = $ymax * $t / 4;
	printf $o qq{<text x="%d" y="%.1f" text-anchor="end">%.0fk</text>\n}, $L - 6, $ypos->($v) + 4, $v / 1000;
	printf $o qq{<line x1="$L" y1="%.1f" x2="%d" y2="%.1f" stroke="#eeeeee"/>\n}, $ypos->($v), $W - $R, $ypos->($v);
}
my $ly = $T + 10;
for my $s (@series) {
	my $d = join(' ', map { sprintf('%.1f,%.1f', $xpos->($xi{ $_->[0] }), $ypos->($_->[1])) } @{ $s->{pts} });
	my $dash = $s->{dash} ? qq{ stroke-dasharray="$s->{dash}"} : '';
	print $o qq{<polyline points="$d" fill="none" stroke="$s->{colour}" stroke-width="2"$dash/>\n};
	printf $o qq{<circle cx="%.1f" cy="%.1f" r="3" fill="$s->{colour}"/>\n}, $xpos->($xi{ $_->[0] }), $ypos->($_->[1])
		for @{ $s->{pts} };
	printf $o qq{<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="$s->{colour}" stroke-width="2"$dash/>\n},
		$W - $R + 10, $ly, $W - $R + 34, $ly;
	printf $o qq{<text x="%d" y="%d">$s->{name}</text>\n}, $W - $R + 40, $ly + 4;
	$ly += 18;
}
print $o "</svg>\n";
close($o);
