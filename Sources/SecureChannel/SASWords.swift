/// The word list for the short authentication string: 256 distinct, short, common English nouns that are
/// easy to say and to picture, sorted, so each byte of the SAS picks one word. No two look or sound alike:
/// every pair is at edit distance 2 or more, the 4-letter prefixes are distinct and so are the Metaphone
/// codes (checked by scripts/oracles/sas_words.py in SASTests). Written for this project; changing it
/// changes what users compare, so it is versioned with the SAS label ("secure-sas-v2").
public enum SASWords {
    /// Exactly 256 words, index = byte value.
    public static let list: [String] = [
        "acid", "acorn", "actor", "adult", "agent", "alarm", "album", "alley", "amber", "anchor", "angle", "apple",
        "apron", "arena", "armor", "arrow", "atlas", "attic", "award", "bacon", "badge", "bagel", "baker", "banjo",
        "barn", "basil", "beach", "beard", "berry", "bike", "bison", "blade", "blank", "blimp", "block", "bloom",
        "boat", "bonus", "bottle", "bowl", "brick", "brush", "bubble", "bucket", "bugle", "button", "cabin", "cable",
        "cactus", "camel", "canal", "candle", "cannon", "canoe", "canvas", "carpet", "carrot", "castle", "cedar",
        "chalk", "chart", "cheese", "cherry", "chief", "chimney", "cinema", "circus", "cloud", "clown", "coach",
        "cobra", "cocoa", "comet", "compass", "coral", "cotton", "cowboy", "crab", "crane", "crayon", "cream",
        "cricket", "cup", "daisy", "dancer", "delta", "denim", "desert", "diary", "dinner", "doctor", "dolphin",
        "donkey", "dragon", "drum", "dune", "eagle", "earth", "easel", "eclipse", "elbow", "emerald", "engine",
        "falcon", "farm", "feather", "fence", "fiddle", "finger", "flag", "flute", "forest", "fossil", "fox", "frog",
        "galaxy", "garden", "garlic", "gecko", "ghost", "giant", "giraffe", "glacier", "glove", "grape", "guitar",
        "hammer", "hamster", "harbor", "harp", "hawk", "hedge", "helmet", "hero", "hippo", "honey", "hotel", "husky",
        "igloo", "island", "ivory", "jacket", "jaguar", "jasmine", "jelly", "jewel", "jigsaw", "judge", "juice",
        "jungle", "kayak", "kettle", "kiwi", "koala", "ladder", "lagoon", "lamp", "lantern", "lava", "lemon", "leopard",
        "lion", "lizard", "llama", "lobster", "lotus", "magnet", "maple", "marble", "meadow", "melon", "mirror",
        "mitten", "moose", "motor", "muffin", "mushroom", "napkin", "needle", "nest", "nugget", "ocean", "olive",
        "onion", "orange", "orbit", "orchid", "otter", "oven", "oyster", "paddle", "palace", "panda", "pebble",
        "pencil", "pepper", "piano", "pigeon", "pillow", "pirate", "planet", "plum", "potato", "pumpkin", "puppet",
        "puzzle", "quartz", "rabbit", "radio", "raft", "rainbow", "raven", "ribbon", "rocket", "rose", "ruby", "salmon",
        "sandal", "saucer", "scarf", "shark", "sheep", "shell", "shovel", "silver", "sketch", "sled", "snail", "spider",
        "sponge", "squid", "statue", "sugar", "summit", "tent", "tiger", "toast", "tomato", "tooth", "towel", "tractor",
        "train", "trumpet", "tulip", "tunnel", "turtle", "violin", "wagon", "walnut", "walrus", "whale", "window",
        "yacht", "yogurt", "zebra", "zipper",
    ]
}
