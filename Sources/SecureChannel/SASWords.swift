/// The word list for the short authentication string: 256 distinct, short, common English nouns that are
/// easy to say and to picture, sorted, so each byte of the SAS picks one word. Written for this project;
/// changing it changes what users compare, so it is versioned with the SAS label ("secure-sas-v1").
public enum SASWords {
    /// Exactly 256 words, index = byte value.
    public static let list: [String] = [
        "acid", "acorn", "actor", "adult", "agent", "alarm", "album", "alley", "amber", "angle", "ankle", "apple",
        "apron", "arena", "armor", "arrow", "atlas", "attic", "award", "bacon", "badge", "bagel", "baker", "banjo",
        "barn", "basil", "basin", "beach", "beard", "bench", "berry", "bike", "bison", "blade", "blank", "blimp",
        "block", "bloom", "board", "boat", "bonus", "boot", "bottle", "bowl", "brain", "brick", "bride", "brush",
        "bucket", "buddy", "bugle", "cabin", "cable", "cactus", "camel", "canal", "candle", "canoe", "canvas",
        "carpet", "carrot", "castle", "cedar", "chalk", "chart", "cheese", "cherry", "chess", "chief", "chimney",
        "cider", "cinema", "circus", "clock", "cloud", "clown", "coach", "cobra", "cocoa", "comet", "coral",
        "cotton", "couch", "cowboy", "crab", "crane", "crayon", "cream", "cricket", "crown", "cube", "cup", "daisy",
        "dancer", "delta", "denim", "desert", "diary", "dinner", "doctor", "dolphin", "donkey", "dragon", "drum",
        "eagle", "earth", "easel", "eclipse", "elbow", "engine", "falcon", "farm", "feather", "fence", "ferry",
        "fiddle", "finger", "flag", "flute", "forest", "fossil", "fox", "frog", "galaxy", "garden", "garlic",
        "gecko", "ghost", "giant", "ginger", "giraffe", "glove", "goat", "gold", "gorilla", "grape", "guitar",
        "hammer", "harbor", "harp", "hawk", "helmet", "hero", "hippo", "honey", "hotel", "husky", "igloo", "island",
        "ivory", "jacket", "jaguar", "jelly", "jewel", "jigsaw", "judge", "juice", "jungle", "kayak", "kettle",
        "kiwi", "koala", "ladder", "lagoon", "lamp", "lava", "lemon", "lion", "lizard", "llama", "lobster", "locket",
        "lotus", "magnet", "mango", "maple", "marble", "meadow", "melon", "mirror", "monkey", "moose", "motor",
        "muffin", "mushroom", "napkin", "needle", "nest", "noodle", "ocean", "olive", "onion", "orange", "orbit",
        "otter", "oyster", "paddle", "palace", "panda", "parrot", "peach", "pencil", "pepper", "piano", "pillow",
        "pirate", "planet", "plum", "pony", "potato", "pumpkin", "puppet", "quartz", "quilt", "rabbit", "radio",
        "raft", "rainbow", "raven", "robot", "rocket", "rose", "ruby", "saddle", "salmon", "sandal", "scarf",
        "shark", "sheep", "shell", "silver", "sketch", "sled", "snail", "spider", "sponge", "squid", "statue",
        "sugar", "summit", "tiger", "toast", "tomato", "tractor", "trumpet", "tulip", "turtle", "violin", "volcano",
        "wagon", "walrus", "whale", "window", "wizard", "yogurt", "zebra",
    ]
}
