// Every limit of the clearing (issue 20, docs/CLEARING.md), each with the reason for its value. The parts of
// the clearing add their limits in extensions next to the code that enforces them.
public enum ClearingLimits {}
