#!/usr/bin/perl
# Counts the unordered pairs (i, j) of 0..n whose sum is divisible by 7.
#
# Both algorithms are O(n^2); `full` visits every ordered pair and halves the
# count, `half` visits each unordered pair once, so it does half the work:
# the experiment golden test expects `half` to be faster and both to grow
# like n^2.
#
# Perl, not Python: perl starts in ~3.5 ms of CPU where python3 -S took
# 60-80 ms here, more than the whole inner loop of `half` at n = 1000. That
# constant floor flattened the measured curve enough for CI to fit k = 1.15
# (tests/src/golden_experiment.rs says more).
use strict;
use warnings;

my ($n, $algorithm) = @ARGV;
die "usage: pair_count.pl N full|half\n"
  unless defined $algorithm && $n =~ /^\d+$/ && $algorithm =~ /^(full|half)$/;

my $count = 0;
if ($algorithm eq 'full') {
    for my $i (0 .. $n - 1) {
        for my $j (0 .. $n - 1) {
            $count++ if $i != $j && ($i + $j) % 7 == 0;
        }
    }
    $count /= 2;
} else {
    for my $i (0 .. $n - 1) {
        for my $j ($i + 1 .. $n - 1) {
            $count++ if ($i + $j) % 7 == 0;
        }
    }
}
print "pairs $count\n";
