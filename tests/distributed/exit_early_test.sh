#!/usr/bin/env bash
# Launches exit_early (exit_early_main.cpp) under mpirun again and again, each launch under a time
# limit, and checks that every job ends by itself with the expected status and message. A rank
# leaving while another waited in a collective made OpenMPI 4.1.4's mpirun hang or crash about 1
# run in 20 (4 of 100 here before the fix; a plain-MPI program: 3 of 40), so one launch proves
# little: 42 launches miss a 1-in-20 failure with probability 0.95^42 = 12%, a 1-in-13 one 4%.
# (Before the fix, modes alone and timed-out failed every time.)
# Two launches run at a time: a launch mostly waits (mpirun start-up), and busy cores are where
# the failure showed.
#
#   exit_early_test.sh EXE MPIRUN [MPIRUN FLAGS...]
#   EXIT_EARLY_LAUNCHES=N   launches of the racy modes (default 42), plus 2 of each other mode
set -u
exe=$(readlink -f "$1")
shift
mpirun=("$@")
launches=${EXIT_EARLY_LAUNCHES:-42}
workers=2
limit=20 # seconds per launch; a good one takes about 1 s
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Kills the ranks a launch left behind (pid files written by exit_early into DIR, checked to still
# be exit_early). Fails when there were any.
reap() {
  local file pid left=0
  for file in "$1"/rank*.pid; do
    [[ -e $file ]] || continue
    pid=$(<"$file")
    if [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == "$exe" ]]; then
      kill -9 "$pid" 2>/dev/null
      left=1
    fi
    rm -f "$file"
  done
  return $left
}

# launch DIR MODE STATUS REGEX: one job, which must end within the limit with an exit status
# matching STATUS and a line matching REGEX. Appends "MODE passed" or "MODE failed" to
# DIR/results.
launch() {
  local dir=$1 mode=$2 want=$3 regex=$4 rc problem=""
  ACLGRAD_TEST_PID_DIR=$dir timeout -k 5 "$limit" "${mpirun[@]}" -np 2 "$exe" "$mode" \
    >"$dir/out" 2>&1
  rc=$?
  if ((rc == 124 || rc == 137)); then
    problem="did not end within $limit s (status $rc from timeout)"
  elif ! [[ $rc =~ ^($want)$ ]]; then
    problem="exit status $rc, expected $want"
  elif ! grep -Eq "$regex" "$dir/out"; then
    problem="no line matching '$regex'"
  fi
  reap "$dir" || problem="${problem:+$problem; }left a rank running"
  if [[ -z $problem ]]; then
    echo "$mode passed" >>"$dir/results"
    return
  fi
  echo "$mode failed" >>"$dir/results"
  { # one write, so that the workers' reports do not interleave
    echo "FAIL: launch of '$mode': $problem; its output:"
    sed 's/^/  | /' "$dir/out"
  } >"$dir/report"
  cat "$dir/report"
}

timed_out="rank 0 on [^:]+: error: rank 0: all-reduce of 8 bytes did not complete within 300 ms"
plan=()
racy=(return exit same)
for ((i = 0; i < launches; ++i)); do
  plan+=("${racy[i % 3]}")
done
plan+=(late alone timed-out late alone timed-out)

# worker W: launches W, W + workers, W + 2 workers, ... of the plan.
worker() {
  local dir=$work/$1 i
  mkdir -p "$dir"
  for ((i = $1; i < ${#plan[@]}; i += workers)); do
    case ${plan[i]} in
      return | exit) launch "$dir" "${plan[i]}" 3 "$timed_out" ;;
      same) launch "$dir" same "1|3" "$timed_out|rank 1 on [^:]+: exiting, but the other ranks" ;;
      late) launch "$dir" late 0 "rank 0 leaving" ;;
      alone) launch "$dir" alone 1 \
        "rank 1 on [^:]+: exiting, but the other ranks did not all reach exit within 300 ms" ;;
      timed-out) launch "$dir" timed-out 1 \
        "rank 0 on [^:]+: exiting after a collective failed or timed out" ;;
    esac
  done
}

start=$SECONDS
for ((w = 0; w < workers; ++w)); do worker $w & done
wait
summary=""
for mode in return exit same late alone timed-out; do
  summary+=" $mode $(cat "$work"/*/results | grep -c "^$mode passed") passed"
  summary+=" $(cat "$work"/*/results | grep -c "^$mode failed") failed;"
done
echo "exit_early: ${#plan[@]} launches, $workers at a time, in $((SECONDS - start)) s:$summary"
! cat "$work"/*/results | grep -q failed
